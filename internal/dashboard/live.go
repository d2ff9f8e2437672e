package dashboard

// The event stream: one source per topic (the panel a page shows),
// started when the first page opens a stream of it and stopped when the
// last one leaves, so a dashboard nobody looks at costs the database
// nothing. The workflows topic's source is the change feed on the
// introspection tables where it sees every writer, a tick otherwise; the
// other panels' are in topics.go. Each page re-reads only what it shows
// when told.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/voltro/voltro/internal/cdc/delta"
	"github.com/voltro/voltro/internal/store"
)

// event is one message of the stream.
type event struct {
	// Kind: hello (the stream's mode), change (a row of Table changed),
	// resync (changes may have been missed: re-read), tick (no feed:
	// re-read what is shown).
	Kind  string    `json:"kind"`
	Table string    `json:"table,omitempty"`
	Key   delta.Row `json:"key,omitempty"`
	// Run is the execution id the changed row belongs to, when it names one.
	Run  string `json:"run,omitempty"`
	Mode string `json:"mode,omitempty"`
	// Panel: the panel whose answer changed (kind panel).
	Panel string `json:"panel,omitempty"`
}

// source runs until ctx ends, emitting events; it returns the stream's
// mode for the pages that join.
type source func(ctx context.Context, emit func(event)) string

// hub fans the source's events out to the open streams.
type hub struct {
	src    source
	log    *slog.Logger
	mu     sync.Mutex
	subs   map[chan event]struct{}
	stop   context.CancelFunc
	mode   string
	closed bool
}

func newHub(src source, log *slog.Logger) *hub {
	return &hub{src: src, log: log, subs: map[chan event]struct{}{}}
}

// join adds a stream; the first one starts the source.
func (h *hub) join() (chan event, string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, "", false
	}
	ch := make(chan event, 64)
	h.subs[ch] = struct{}{}
	if h.stop == nil {
		ctx, cancel := context.WithCancel(context.Background())
		h.stop = cancel
		h.mode = h.src(ctx, h.emit)
	}
	return ch, h.mode, true
}

// leave removes a stream; the last one stops the source.
func (h *hub) leave(ch chan event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, ch)
	if len(h.subs) == 0 && h.stop != nil {
		h.stop()
		h.stop = nil
	}
}

func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	if h.stop != nil {
		h.stop()
		h.stop = nil
	}
	for ch := range h.subs {
		close(ch)
		delete(h.subs, ch)
	}
}

// emit hands e to every stream; a stream too slow to keep up is told to
// re-read instead of being blocked on.
func (h *hub) emit(e event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- e:
		default:
			select {
			case ch <- event{Kind: "resync"}:
			default:
			}
		}
	}
}

// source is the change feed where it sees other processes' writes, a
// tick every PollEvery otherwise.
func (d *Dashboard) source() source {
	return func(ctx context.Context, emit func(event)) string {
		if f := d.c.Feed; f != nil && f.Transport().CrossInstance() {
			var chans []<-chan delta.Delta
			var err error
			for _, t := range store.IntrospectionTables {
				var ch <-chan delta.Delta
				if ch, err = f.Subscribe(ctx, t, nil); err != nil {
					break
				}
				chans = append(chans, ch)
			}
			if err == nil {
				for _, ch := range chans {
					go forward(ctx, ch, emit)
				}
				return "feed " + f.Flavor()
			}
			d.c.Logger.Warn("dashboard: the change feed cannot follow the introspection tables; polling instead", "err", err)
		}
		go func() {
			t := time.NewTicker(d.c.PollEvery)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					emit(event{Kind: "tick"})
				}
			}
		}()
		return "poll " + d.c.PollEvery.String()
	}
}

func forward(ctx context.Context, ch <-chan delta.Delta, emit func(event)) {
	for {
		select {
		case <-ctx.Done():
			return
		case dl, ok := <-ch:
			if !ok {
				return
			}
			if dl.Op == delta.Resync {
				emit(event{Kind: "resync", Table: dl.Table})
				continue
			}
			emit(event{Kind: "change", Table: dl.Table, Key: dl.Key, Run: runOf(dl)})
		}
	}
}

// A stream writes a keep-alive comment every streamKeepAlive (proxies
// drop silent connections), and a write not done within
// streamWriteWindow drops the stream.
const (
	streamKeepAlive   = 15 * time.Second
	streamWriteWindow = 30 * time.Second
)

// stream serves text/event-stream of ?panel= (the workflows topic by
// default, and for the run page) until the page leaves.
func (d *Dashboard) stream(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "streaming unsupported by this server"})
		return
	}
	name := r.URL.Query().Get("panel")
	if name == "" || name == "run" {
		name = topicWorkflows
	}
	h, ok := d.hubs[name]
	if !ok {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "panel " + strconv.Quote(name) + ": use workflows, run, cluster, schedules, messages or logs"})
		return
	}
	ch, mode, ok := h.join()
	if !ok {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "the dashboard is shutting down"})
		return
	}
	defer h.leave(ch)
	// The server's timeouts bound a whole response (the instance's inspect
	// server cuts one at 40 s): a stream instead gets a rolling write
	// deadline, renewed by every write, keep-alives included, so a client
	// that stops reading is still dropped; reads are not needed.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	renew := func() { _ = rc.SetWriteDeadline(time.Now().Add(streamWriteWindow)) }
	renew()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(e event) bool {
		b, _ := json.Marshal(e)
		renew()
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.Kind, b); err != nil {
			return false
		}
		fl.Flush()
		return true
	}
	if !send(event{Kind: "hello", Mode: mode}) {
		return
	}
	keep := time.NewTicker(streamKeepAlive)
	defer keep.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case e, ok := <-ch:
			if !ok || !send(e) {
				return
			}
		case <-keep.C:
			renew()
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

// runOf is the execution id of a changed introspection row.
func runOf(dl delta.Delta) string {
	for _, r := range []delta.Row{dl.Key, dl.Row, dl.Old} {
		if id, ok := r["executionId"].(string); ok {
			return id
		}
	}
	return ""
}
