// Package open opens the store a configuration names, by dialect.
package open
