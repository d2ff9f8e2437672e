// Package test renders the voltro Helm chart with Helm's own Go code.
package test
