package voltro_test

// Runnable examples on a SQLite file: a start and a send in the
// application's own transaction, a client that hosts nothing, and a
// workflow changed behind Patched across deploys. go test runs them and
// checks their output.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/voltro/voltro"
	_ "github.com/voltro/voltro/driver/sqlite" // the driver of the database the program uses
)

// exampleDB is a SQLite file in a new temporary directory, and the
// function that removes it.
func exampleDB() (url string, remove func()) {
	dir, err := os.MkdirTemp("", "voltro-example")
	if err != nil {
		panic(err)
	}
	return "sqlite:" + filepath.Join(dir, "app.db"), func() { _ = os.RemoveAll(dir) }
}

// exampleConfig is the configuration the SQLite examples use; they ignore
// the process environment, so what they print does not depend on it.
func exampleConfig(url string) []voltro.Option {
	return []voltro.Option{
		voltro.WithConfig(voltro.Config{DatabaseURL: url, ReplicaID: "example", PollInterval: 50 * time.Millisecond}),
		voltro.WithEnv(func(string) string { return "" }),
		voltro.WithLogger(slog.New(slog.DiscardHandler)),
	}
}

// startAppOn starts an app on url with items registered.
func startAppOn(ctx context.Context, url string, items ...voltro.Registrable) *voltro.App {
	app, err := voltro.New(ctx, exampleConfig(url)...)
	if err != nil {
		panic(err)
	}
	if err := app.Register(items...); err != nil {
		panic(err)
	}
	if err := app.Start(ctx); err != nil {
		panic(err)
	}
	return app
}

// awaitSuspended waits until run id waits (on a signal, a timer or a
// child), or ctx ends.
func awaitSuspended(ctx context.Context, app *voltro.App, id string) {
	for {
		st, err := app.Get(ctx, id)
		if err == nil && st.Status == voltro.StatusSuspended {
			return
		}
		select {
		case <-ctx.Done():
			panic(fmt.Sprintf("%s never waited: %v %v", id, st.Status, err))
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// The order row and the run that ships it are written in one transaction:
// both exist if it commits, neither if it rolls back. Its owner starts the
// run as soon as the transaction commits.
func ExampleWorkflow_StartTx() {
	ctx := context.Background()
	url, remove := exampleDB()
	defer remove()
	ship := voltro.NewWorkflow("example.shiptx", func(wc *voltro.WorkflowContext, order int) (string, error) {
		return fmt.Sprintf("order %d shipped", order), nil
	})
	app := startAppOn(ctx, url, ship)
	defer app.Close(ctx)
	db, _, err := app.DB() // or your own pool on the same file
	if err != nil {
		panic(err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE orders (id INTEGER PRIMARY KEY)"); err != nil {
		panic(err)
	}

	place := func(order int, commit bool) *voltro.Handle[string] {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			panic(err)
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, "INSERT INTO orders (id) VALUES (?)", order); err != nil {
			panic(err)
		}
		h, err := ship.StartTx(ctx, app, tx, order)
		if err != nil {
			panic(err)
		}
		if commit {
			if err := tx.Commit(); err != nil {
				panic(err)
			}
		}
		return h
	}
	fmt.Println(place(17, true).Result(ctx))
	_, err = app.Get(ctx, place(18, false).ID)
	fmt.Println("rolled back:", errors.Is(err, voltro.ErrNotFound))
	// Output:
	// order 17 shipped <nil>
	// rolled back: true
}

// A message sent in the caller's transaction is delivered once the
// transaction commits, and never if it rolls back.
func ExampleEntity_SendTx() {
	ctx := context.Background()
	url, remove := exampleDB()
	defer remove()
	notes := make(chan string, 2)
	audit := voltro.NewEntity("example.audit", func(ctx context.Context, id string, note string) (struct{}, error) {
		notes <- id + ": " + note
		return struct{}{}, nil
	})
	app := startAppOn(ctx, url, audit)
	defer app.Close(ctx)
	db, _, err := app.DB()
	if err != nil {
		panic(err)
	}

	for _, commit := range []bool{false, true} {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			panic(err)
		}
		if err := audit.SendTx(ctx, app, tx, "order-17", fmt.Sprintf("created (committed: %v)", commit)); err != nil {
			panic(err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			panic(err)
		}
	}
	fmt.Println(<-notes) // one entity's messages arrive in order: a rolled back one would come first
	// Output: order-17: created (committed: true)
}

// A process that only starts, signals and reads runs (a web tier, a
// script) opens a Client: it hosts nothing, and the instance that hosts
// the workflow runs what it starts.
func ExampleNewClient() {
	ctx := context.Background()
	url, remove := exampleDB()
	defer remove()
	approve := voltro.NewWorkflow("example.approve", func(wc *voltro.WorkflowContext, amount int) (string, error) {
		by, err := voltro.AwaitSignal[string](wc, "approve", 0)
		return fmt.Sprintf("%d approved by %s", amount, by), err
	})
	app := startAppOn(ctx, url, approve) // the instance that hosts the workflow
	defer app.Close(ctx)

	c, err := voltro.NewClient(ctx, exampleConfig(url)...) // the web tier
	if err != nil {
		panic(err)
	}
	defer c.Close()
	h, err := approve.Start(ctx, c, 120, voltro.WithKey("expense-7")) // or c.Start(ctx, "example.approve", 120)
	if err != nil {
		panic(err)
	}
	if _, err := c.Signal(ctx, h.ID, "approve", "ann"); err != nil {
		panic(err)
	}
	fmt.Println(h.Result(ctx))
	st, err := c.Get(ctx, h.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(st.Name, st.Status)
	// Output:
	// 120 approved by ann <nil>
	// example.approve completed
}
