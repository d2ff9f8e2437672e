// The store packages whose SQL the feed runs: they register their row
// dialects (store/rowsql) and hold the transports' statements.
package cdc

import (
	_ "github.com/voltro/voltro/internal/store/mysql"    // mariadb, mysql
	_ "github.com/voltro/voltro/internal/store/postgres" // postgres
	_ "github.com/voltro/voltro/internal/store/sqlite"   // sqlite, memory
)
