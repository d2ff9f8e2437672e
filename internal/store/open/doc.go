// Package open opens the store a configuration names, by dialect, through
// the openers the driver packages registered (as database/sql drivers do):
// a program links only the databases it imports, e.g.
//
//	import _ "github.com/voltro/voltro/driver/postgres"
//
// The memory store is built in.
package open
