package alldrivers

import (
	_ "github.com/voltro/voltro/driver/mysql"    // mariadb, mysql
	_ "github.com/voltro/voltro/driver/postgres" // postgres
	_ "github.com/voltro/voltro/driver/sqlite"   // sqlite
)
