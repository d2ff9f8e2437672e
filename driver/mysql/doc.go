// Package mysql is the MariaDB and MySQL driver of voltro: importing it
// lets a program open mariadb:// and mysql:// databases (the store, and on
// MariaDB the change feed's binlog reader), as importing a database/sql
// driver does.
//
//	import _ "github.com/voltro/voltro/driver/mysql"
package mysql
