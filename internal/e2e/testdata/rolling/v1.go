//go:build !v2

package main

import "github.com/voltro/voltro"

const version = "v1"

// charge, v1: the amount as it is.
func charge(wc *voltro.WorkflowContext, amount int) (string, int, error) {
	total, err := step(wc, "charge", amount)
	return "v1", total, err
}
