// Runnable example of the public change API on the memory dialect.
package changes_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/voltro/voltro/changes"
)

// A subscriber sees the writes made through the feed, filtered, after they
// commit. Against PostgreSQL or a binlog-enabled MariaDB the same code sees
// the writes of every instance and of any other client.
func Example() {
	ctx := context.Background()
	feed, err := changes.Open(ctx, changes.Config{URL: "memory:", ReplicaID: "pod-0", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer feed.Close()
	if _, err := feed.DB().ExecContext(ctx, `CREATE TABLE orders (id INTEGER PRIMARY KEY, status TEXT NOT NULL)`); err != nil {
		panic(err)
	}
	paid, err := feed.Subscribe(ctx, "orders", changes.Filter{"status": "paid"})
	if err != nil {
		panic(err)
	}
	if _, err := feed.Insert(ctx, "orders", changes.Row{"id": 1, "status": "new"}); err != nil {
		panic(err)
	}
	if _, err := feed.Update(ctx, "orders", changes.Row{"id": 1}, changes.Row{"status": "paid"}); err != nil {
		panic(err)
	}
	d := <-paid
	fmt.Printf("sql dialect resolved: %s — CDC: %s\n", feed.Dialect(), feed.Transport().Label())
	fmt.Println(d.Op, d.Table, d.Key["id"], d.Old["status"], "->", d.Row["status"])
	// Output:
	// sql dialect resolved: memory — CDC: in-process bus
	// update orders 1 new -> paid
}

// Writes in one Tx are published together when it commits, and not at all
// when it rolls back.
func ExampleFeed_Tx() {
	ctx := context.Background()
	feed, err := changes.Open(ctx, changes.Config{URL: "memory:", ReplicaID: "pod-0", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer feed.Close()
	if _, err := feed.DB().ExecContext(ctx, `CREATE TABLE stock (sku TEXT PRIMARY KEY, qty INTEGER NOT NULL)`); err != nil {
		panic(err)
	}
	ch, err := feed.Subscribe(ctx, "stock", nil)
	if err != nil {
		panic(err)
	}
	err = feed.Tx(ctx, func(tx *changes.Tx) error {
		if _, err := tx.Insert(ctx, "stock", changes.Row{"sku": "lamp", "qty": 3}); err != nil {
			return err
		}
		return errors.New("out of desks") // rolled back: nothing is published
	})
	fmt.Println("first:", err)
	err = feed.Tx(ctx, func(tx *changes.Tx) error {
		if _, err := tx.Insert(ctx, "stock", changes.Row{"sku": "lamp", "qty": 3}); err != nil {
			return err
		}
		_, err := tx.Update(ctx, "stock", changes.Row{"sku": "lamp"}, changes.Row{"qty": 2})
		return err
	})
	fmt.Println("second:", err)
	for range 2 {
		d := <-ch
		fmt.Println(d.Op, d.Key["sku"], d.Row["qty"])
	}
	// Output:
	// first: out of desks
	// second: <nil>
	// insert lamp 3
	// update lamp 2
}
