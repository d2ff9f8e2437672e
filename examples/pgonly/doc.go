// Command pgonly is the smallest PostgreSQL-only voltro program: the core
// plus the one driver it uses. It exists to measure what such a service
// links (no SQLite, no MySQL driver, no binlog reader); see
// docs/configuration.md, "Drivers".
//
//	DB_URL=postgres://postgres@127.0.0.1:5432/postgres go run ./examples/pgonly
package main
