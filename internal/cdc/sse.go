// The Server-Sent Events endpoint: a browser subscribes to a table (and a
// filter) with GET ?table=T&where=COL=VALUE and receives one event per delta.

package cdc

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/voltro/voltro/internal/cdc/delta"
)

// SSEOptions tunes the SSE endpoint.
type SSEOptions struct {
	// Tables lists the tables the endpoint may serve; a request for any
	// other is refused with 403. Empty serves none: exposing a table to
	// browsers is a decision the application makes by name.
	Tables []string
	// Allow, when set, is asked too for each request (after Tables), e.g.
	// to check the user may watch that table. Mount the handler behind your
	// own authentication either way.
	Allow func(r *http.Request, table string) bool
	// Heartbeat is the interval of keep-alive comments (default 15 s).
	Heartbeat time.Duration
}

// SSEHandler serves the feed as text/event-stream. Each event is named by
// the delta's op (insert, update, delete, resync) and carries the delta as
// JSON; ids count up per stream. Only the tables in opts.Tables are served.
func (f *Feed) SSEHandler(opts SSEOptions) http.Handler {
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = 15 * time.Second
	}
	allowed := make(map[string]bool, len(opts.Tables))
	for _, t := range opts.Tables {
		allowed[t] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		table := r.URL.Query().Get("table")
		filter, err := delta.ParseFilter(r.URL.Query()["where"])
		if err != nil || table == "" {
			http.Error(w, "want ?table=NAME and optional where=COL=VALUE", http.StatusBadRequest)
			return
		}
		if !allowed[table] || (opts.Allow != nil && !opts.Allow(r, table)) {
			http.Error(w, "table not allowed", http.StatusForbidden)
			return
		}
		flusher, ok := w.(http.Flusher)
		if !ok {
			http.Error(w, "streaming unsupported", http.StatusInternalServerError)
			return
		}
		ch, err := f.Subscribe(r.Context(), table, filter)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("Connection", "keep-alive")
		h.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		fmt.Fprintf(w, ": subscribed to %s\nretry: 1000\n\n", table)
		flusher.Flush()
		tick := time.NewTicker(opts.Heartbeat)
		defer tick.Stop()
		var id int64
		for {
			select {
			case d, ok := <-ch:
				if !ok {
					return
				}
				b, err := json.Marshal(d)
				if err != nil {
					f.log.Warn("sse: delta not encodable", "err", err, "table", d.Table)
					continue
				}
				id++
				if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", id, d.Op, b); err != nil {
					return
				}
				flusher.Flush()
			case <-tick.C:
				if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
					return
				}
				flusher.Flush()
			case <-r.Context().Done():
				return
			}
		}
	})
}
