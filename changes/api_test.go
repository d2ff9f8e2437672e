package changes_test

// The parts of the public change API no other test reached: filters as
// text, configuration from an environment, the SSE endpoint's refusal and
// a transaction's SQL handle (the memory dialect is an in-memory SQLite).

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/voltro/voltro/changes"
)

func TestFilterText(t *testing.T) {
	f, err := changes.ParseFilter([]string{"status=paid", "id=1"})
	if err != nil {
		t.Fatal(err)
	}
	if f["status"] != "paid" || f["id"] != "1" || f.String() == "" {
		t.Fatalf("ParseFilter: %v (%q)", f, f.String())
	}
	if _, err := changes.ParseFilter([]string{"no-equals"}); err == nil {
		t.Fatal("a term without = was accepted")
	}
}

func TestConfigFromEnv(t *testing.T) {
	env := map[string]string{"DB_URL": "memory:", "POD_NAME": "pod-9", "CDC": "0"}
	c, err := changes.ConfigFromEnv(func(k string) string { return env[k] })
	if err != nil || c.URL != "memory:" || c.ReplicaID != "pod-9" || !c.DisableCDC {
		t.Fatalf("%+v, %v", c, err)
	}
}

func TestSSEHandlerServesOnlyItsTables(t *testing.T) {
	ctx := context.Background()
	feed, err := changes.Open(ctx, changes.Config{URL: "memory:", ReplicaID: "pod-0", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Close()
	srv := httptest.NewServer(feed.SSEHandler(changes.SSEOptions{Tables: []string{"orders"}}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "?table=secrets")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a table not listed: %d, want 403", resp.StatusCode)
	}
}

func TestTxSQLHandle(t *testing.T) {
	ctx := context.Background()
	feed, err := changes.Open(ctx, changes.Config{URL: "memory:", ReplicaID: "pod-0", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Close()
	if err := feed.Tx(ctx, func(tx *changes.Tx) error {
		var one int
		if err := tx.SQL().QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
			t.Errorf("a read through the transaction's SQL handle: %d, %v", one, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
