// Package config reads the deployment contract (environment variables) into
// a validated Config. Invalid values that would make a cluster unsafe fail
// with a clear error; values that have a safe default (the runner port) are
// replaced with a warning.
package config
