//go:build v2

package main

import "github.com/voltro/voltro"

const version = "v2"

// charge, v2: with tax, behind Patched; runs that charged under v1 keep
// v1's branch.
func charge(wc *voltro.WorkflowContext, amount int) (string, int, error) {
	if voltro.Patched(wc, "charge-with-tax") {
		total, err := step(wc, "charge-with-tax", amount*2)
		return "v2", total, err
	}
	total, err := step(wc, "charge", amount)
	return "v1", total, err
}
