// A one-off outage does not end a result wait: the awaiting client's
// connections are killed mid-await, and Await still returns the run's result.

package voltro_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/testwait"
)

func TestClientAwaitOutlivesKilledConnections(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	db := txPostgres(t, "awaitkill")
	const appName = "voltro-awaitkill-client"
	sep := "?"
	if strings.Contains(db.url, "?") {
		sep = "&"
	}
	var logs bytes.Buffer
	c := newClient(t, db.url+sep+"application_name="+appName, &logs)
	txApp(t, db.url, "50ms", clientWait)
	h, err := clientWait.Start(ctx, c, greetIn{Name: "kim"})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := c.Await(ctx, h.ID)
		done <- result{out, err}
	}()
	admin := db.pool(t)
	backends := func() int {
		var n int
		if err := admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = $1", appName).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	ended := func() {
		select {
		case r := <-done:
			t.Fatalf("the await ended during the outage: %s, %v", r.out, r.err)
		default:
		}
	}
	// Three times: wait for the client to hold a connection again (the
	// await's poll reconnected), then kill every one it holds.
	for range 3 {
		testwait.For(t, 20*time.Second, "the client holds a connection", func() bool { ended(); return backends() > 0 })
		if _, err := admin.ExecContext(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", appName); err != nil {
			t.Fatal(err)
		}
	}
	// The signal may meet a dead pooled connection too: sent until it is
	// stored.
	testwait.For(t, 20*time.Second, "the signal is stored", func() bool {
		ended()
		ok, err := c.Signal(ctx, h.ID, "go", true)
		return err == nil && ok
	})
	if r := <-done; r.err != nil || string(r.out) != `"go kim"` {
		t.Fatalf("the await across the outage: %s, %v", r.out, r.err)
	}
}
