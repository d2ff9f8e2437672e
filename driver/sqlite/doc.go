// Package sqlite is the SQLite driver of voltro: importing it lets a
// program open sqlite: databases (one process per file), as importing a
// database/sql driver does. The change feed of the built-in memory store
// also needs it for its data API (an in-memory SQLite database).
//
//	import _ "github.com/voltro/voltro/driver/sqlite"
package sqlite
