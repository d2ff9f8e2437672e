// Package postgres is the PostgreSQL driver of voltro: importing it lets a
// program open postgres:// databases (the store, and the change feed's
// LISTEN/NOTIFY transport), as importing a database/sql driver does.
//
//	import _ "github.com/voltro/voltro/driver/postgres"
package postgres
