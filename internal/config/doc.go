// Package config is the one typed configuration of an instance and the one
// reader of the process environment. env.go turns the environment into
// Settings (each field named by its variable); voltro.Config lays an
// application's own values over them field by field; Settings.Resolve
// applies the defaults and checks every value into a Config. Invalid values
// that would make a cluster unsafe fail with a clear error naming the
// variable; values that have a safe default (the runner port) are replaced
// with a warning. A lint test (internal/lint) keeps every other package
// from reading the environment.
package config
