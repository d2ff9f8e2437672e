package voltro_test

// Runnable examples of the app around the workflows, on the memory store:
// configuration, entities and their messages, schedules, change events and
// health. go test runs them and checks their output.

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/changes"
)

// An app is configured by the environment (DB_URL, POD_NAME, …), or in
// code with a Config over it; then Register what it runs, and Start.
func ExampleWithConfig() {
	ctx := context.Background()
	app, err := voltro.New(ctx,
		voltro.WithConfig(voltro.Config{DatabaseURL: "memory:", ReplicaID: "orders-0", Shards: 16}),
		voltro.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		panic(err)
	}
	defer app.Close(ctx)
	if err := app.Start(ctx); err != nil {
		panic(err)
	}
	_, total := app.Shards()
	fmt.Println("shards:", total)
	// Output: shards: 16
}

// An entity type handles typed messages addressed by id, one at a time per
// id, on the instance that owns the id's shard. Request waits for the
// reply; Send only persists the message.
func ExampleNewEntity() {
	ctx := context.Background()
	var mu sync.Mutex
	totals := map[string]int{} // an app keeps this in its database
	counter := voltro.NewEntity("example.counter", func(ctx context.Context, id string, n int) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		totals[id] += n
		return totals[id], nil
	}, voltro.MaxAttempts(3))
	app := startApp(ctx, counter)
	defer app.Close(ctx)

	for _, n := range []int{5, 2} {
		total, err := counter.Request(ctx, app, "c1", n)
		fmt.Println(total, err)
	}
	// a repeated send with the same dedupe key is stored once
	for range 2 {
		if _, err := counter.Request(ctx, app, "c2", 10, voltro.DedupeKey("invoice-9")); err != nil {
			panic(err)
		}
	}
	fmt.Println(counter.Request(ctx, app, "c2", 0))
	// Output:
	// 5 <nil>
	// 7 <nil>
	// 10 <nil>
}

// A schedule fires once per tick across all instances of the app (here
// every second, with the tick's time); Coordination and Overlap choose how.
func ExampleNewSchedule() {
	ctx := context.Background()
	fired := make(chan time.Time, 1)
	report := voltro.NewSchedule("example.report", "* * * * * *", func(ctx context.Context, scheduledAt time.Time) error {
		select {
		case fired <- scheduledAt:
		default:
		}
		return nil
	}, voltro.Coordination(voltro.CoordinationSingle), voltro.Overlap(voltro.OverlapSkip))
	app := startApp(ctx, report)
	defer app.Close(ctx)

	at := <-fired
	fmt.Println("fired on a whole second:", at.Nanosecond() == 0)
	// Output: fired on a whole second: true
}

// Writes through the app's change feed (and, on PostgreSQL and MariaDB,
// any write to the database) become change events on every instance.
func ExampleApp_Changes() {
	ctx := context.Background()
	app := startApp(ctx)
	defer app.Close(ctx)
	feed := app.Changes()
	if _, err := feed.DB().ExecContext(ctx, `CREATE TABLE stock (sku TEXT PRIMARY KEY, qty INTEGER NOT NULL)`); err != nil {
		panic(err)
	}
	events, err := feed.Subscribe(ctx, "stock", nil) // every change of the table
	if err != nil {
		panic(err)
	}
	err = feed.Tx(ctx, func(tx *changes.Tx) error { // published if and only if it commits
		if _, err := tx.Insert(ctx, "stock", changes.Row{"sku": "lamp", "qty": 3}); err != nil {
			return err
		}
		_, err := tx.Insert(ctx, "stock", changes.Row{"sku": "desk", "qty": 1})
		return err
	})
	if err != nil {
		panic(err)
	}
	for range 2 {
		d := <-events
		fmt.Println(d.Op, d.Table, d.Key["sku"], d.Row["qty"])
	}
	// Output:
	// insert stock lamp 3
	// insert stock desk 1
}

// Health is the readiness verdict (what /_voltro/health/ready serves) with typed problem
// kinds; Ready is the same, flattened to text.
func ExampleApp_Health() {
	ctx := context.Background()
	app := startApp(ctx)
	defer app.Close(ctx)
	h := app.Health(ctx)
	for _, p := range h.Problems {
		if p.Kind == voltro.ProblemDatabase {
			fmt.Println("the database does not answer:", p.Detail)
		}
	}
	fmt.Println("ready:", h.Ready)
	// Output: ready: true
}
