// Package voltro makes clustering built in for Go applications that run on
// their own SQL database. Run one instance, or N instances against the same
// database, and they form a cluster: entity messages are persisted and
// delivered by whichever instance owns the entity's shard, work moves to a
// surviving instance when one dies, and the database is the only shared part.
//
// A minimal program:
//
//	app, err := voltro.New(ctx)            // DB_URL from the environment
//	counter := voltro.NewEntity("counter", func(ctx context.Context, id string, n int) (int, error) { … })
//	app.Register(counter)
//	app.Start(ctx)
//	total, err := counter.Request(ctx, app, "c1", 5)
package voltro
