// The SSE endpoint end to end with a real HTTP client.
package cdc

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/cdc/delta"
	"github.com/voltro/voltro/internal/testdb"
)

type sseEvent struct {
	id, event string
	d         delta.Delta
}

// readEvents parses a text/event-stream body into events on a channel.
func readEvents(t *testing.T, body *bufio.Reader) <-chan sseEvent {
	out := make(chan sseEvent, 16)
	go func() {
		defer close(out)
		var ev sseEvent
		for {
			line, err := body.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case line == "":
				if ev.event != "" {
					out <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				ev.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				if err := json.Unmarshal([]byte(line[6:]), &ev.d); err != nil {
					t.Errorf("bad data line %q: %v", line, err)
				}
			}
		}
	}()
	return out
}

// A browser-style client on instance B's SSE endpoint sees a write made on
// instance A, filtered.
func TestSSEEndToEnd(t *testing.T) {
	url := testdb.Postgres(t, "cdcsse")
	a := open(t, Config{URL: url, ReplicaID: "a"})
	b := open(t, Config{URL: url, ReplicaID: "b"})
	mustExec(t, a, itemsDDL(a.Dialect(), "items"), itemsDDL(a.Dialect(), "secrets"), itemsDDL(a.Dialect(), "audit"))
	srv := httptest.NewServer(b.SSEHandler(SSEOptions{
		Tables: []string{"items", "audit"},
		Allow:  func(r *http.Request, table string) bool { return table != "audit" || r.Header.Get("X-Admin") == "1" },
	}))
	defer srv.Close()
	// with no Tables, nothing is served
	none := httptest.NewServer(b.SSEHandler(SSEOptions{}))
	defer none.Close()
	if resp, err := http.Get(none.URL + "?table=items"); err != nil || resp.StatusCode != 403 {
		t.Fatalf("default handler served items: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	for path, code := range map[string]int{"": 400, "?table=secrets": 403, "?table=audit": 403, "?table=bad-name": 403, "?table=items&where=nope": 400} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != code {
			t.Errorf("GET %q: %d, want %d", path, resp.StatusCode, code)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"?table=items&where=status=paid", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, ct)
	}
	events := readEvents(t, bufio.NewReader(resp.Body))
	// the first comment line is flushed once the subscription exists, so the
	// writes below cannot race it: the response headers came after Subscribe
	if _, err := a.Insert(ctx, "items", delta.Row{"name": "unpaid"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Insert(ctx, "items", delta.Row{"name": "paid one", "status": "paid"}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-events:
		if ev.event != "insert" || ev.id != "1" || ev.d.Row["name"] != "paid one" || ev.d.Table != "items" {
			t.Fatalf("event %+v", ev)
		}
	case <-ctx.Done():
		t.Fatal("no SSE event")
	}
}
