// Command service is the order service of package orders as a process:
// built plain it is v1, with -tags v2 the patched v2. It hosts the order
// workflows, creates the orders table, takes orders over HTTP (POST
// /orders, a JSON Order without its day; 201 with the run id, 422 when
// the row or the run is refused, so neither exists), prints "ORDERS <base
// URL>" and "READY <inspect address>" once it serves, and leaves the
// cluster gracefully on SIGTERM.
//
//	DB_URL=postgres://… service -day 1s -http 127.0.0.1:0
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/voltro/voltro"
	_ "github.com/voltro/voltro/driver/postgres"
	"github.com/voltro/voltro/internal/e2e/testdata/orders"
)

func main() {
	day := flag.Duration("day", 24*time.Hour, "how long a day of an order's timeline lasts (recorded in each order placed here)")
	addr := flag.String("http", "127.0.0.1:0", "address to take orders on")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, *day, *addr); err != nil {
		fmt.Println("BOOTFAIL", err)
		os.Exit(3)
	}
}

func run(ctx context.Context, day time.Duration, addr string) error {
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	app, err := voltro.New(ctx, voltro.WithLogger(log))
	if err != nil {
		return err
	}
	defer func() { _ = app.Close(context.Background()) }()
	if err := app.Register(orders.Workflows()...); err != nil {
		return err
	}
	db, dialect, err := app.DB()
	if err != nil {
		return err
	}
	if err := orders.CreateTable(ctx, db); err != nil {
		return err
	}
	if err := app.Start(ctx); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: placing(app, db, dialect, day, log), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Println("ORDERS http://" + ln.Addr().String())
	fmt.Println("READY", app.InspectAddr())
	<-ctx.Done()
	_ = srv.Shutdown(context.Background())
	return nil
}

// placing serves POST /orders.
func placing(app *voltro.App, db *sql.DB, dialect string, day time.Duration, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", func(w http.ResponseWriter, r *http.Request) {
		var o orders.Order
		if err := json.NewDecoder(r.Body).Decode(&o); err != nil || o.ID == "" {
			http.Error(w, "want a JSON order with an id", http.StatusBadRequest)
			return
		}
		o.Day = day
		h, err := orders.Place(r.Context(), app, db, dialect, o)
		if err != nil {
			status := http.StatusUnprocessableEntity
			if errors.Is(err, context.Canceled) {
				status = http.StatusServiceUnavailable
			}
			log.Info("order refused", "order", o.ID, "err", err)
			http.Error(w, err.Error(), status)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]string{"run": h.ID})
	})
	return mux
}
