// Package alldrivers links every database driver voltro has, for the test
// binaries that open SQL stores through the public API (or open.DB) and
// for the tools that speak to any database. Programs import the drivers
// they use themselves: _ "github.com/voltro/voltro/driver/postgres", ….
package alldrivers
