// Package voltro makes clustering built in for Go applications that run on
// their own SQL database. Run one instance, or N instances against the same
// database, and they form a cluster: entity messages are persisted and
// delivered by whichever instance owns the entity's shard, work moves to a
// surviving instance when one dies, and the database is the only shared part.
//
// A minimal program:
//
//	import _ "github.com/voltro/voltro/driver/postgres" // one per database the program uses
//
//	app, err := voltro.New(ctx)            // DB_URL from the environment
//	counter := voltro.NewEntity("counter", func(ctx context.Context, id string, n int) (int, error) { … })
//	app.Register(counter)
//	app.Start(ctx)
//	total, err := counter.Request(ctx, app, "c1", 5)
//
// As with database/sql, the package links no database driver: a program
// imports driver/postgres, driver/mysql (MariaDB and MySQL) or
// driver/sqlite for the DB_URL it is given; memory: is built in. A DB_URL
// whose driver is missing fails New with an invalid_config error naming the
// import.
package voltro
