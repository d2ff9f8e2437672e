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

	"github.com/voltro/voltro/internal/cdc"
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
	ready  chan struct{} // closed once the running source's mode is known
	mode   string
	closed bool
}

func newHub(src source, log *slog.Logger) *hub {
	return &hub{src: src, log: log, subs: map[chan event]struct{}{}}
}

// join adds a stream; the first one starts the source, outside the lock
// (it may connect to the database): the streams that join meanwhile wait
// for its mode, while the others come and go.
func (h *hub) join() (chan event, string, bool) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, "", false
	}
	ch := make(chan event, 64)
	h.subs[ch] = struct{}{}
	if h.stop != nil {
		ready := h.ready
		h.mu.Unlock()
		<-ready
		h.mu.Lock()
		defer h.mu.Unlock()
		return ch, h.mode, true
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = cancel
	ready := make(chan struct{})
	h.ready = ready
	h.mu.Unlock()
	mode := h.src(ctx, h.emit)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.mode = mode
	close(ready)
	return ch, mode, true
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
// tick every PollEvery otherwise (and when the feed does not answer within
// subscribeWithin, which the mode then says). Changes are coalesced: at
// most one event every workflowsGap.
func (d *Dashboard) source() source {
	return func(ctx context.Context, emit func(event)) string {
		if f := d.feed(); f != nil && f.Transport().CrossInstance() {
			chans, err := subscribeAll(ctx, f, store.IntrospectionTables)
			if err == nil {
				in := make(chan event, 64)
				for _, ch := range chans {
					go forward(ctx, ch, in)
				}
				go coalesce(ctx, in, workflowsGap, emit)
				return "feed " + f.Flavor()
			}
			d.c.Logger.Warn("dashboard: the change feed cannot follow the introspection tables; polling instead", "err", err)
			d.tick(ctx, emit)
			return "poll " + d.c.PollEvery.String() + " (the change feed failed: " + err.Error() + ")"
		}
		d.tick(ctx, emit)
		return "poll " + d.c.PollEvery.String()
	}
}

const (
	// subscribeWithin bounds subscribing to the feed (it may connect and
	// install triggers); past it the stream polls.
	subscribeWithin = 10 * time.Second
	// workflowsGap is the least time between two events of the workflows
	// topic: a busy cluster's changes fold into one re-read per gap.
	workflowsGap = 250 * time.Millisecond
)

// subscribeAll subscribes to every table, giving up after subscribeWithin.
func subscribeAll(ctx context.Context, f *cdc.Feed, tables []string) ([]<-chan delta.Delta, error) {
	sctx, cancel := context.WithCancel(ctx)
	type result struct {
		chans []<-chan delta.Delta
		err   error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		for _, t := range tables {
			var ch <-chan delta.Delta
			if ch, r.err = f.Subscribe(sctx, t, nil); r.err != nil {
				break
			}
			r.chans = append(r.chans, ch)
		}
		done <- r
	}()
	timer := time.NewTimer(subscribeWithin)
	defer timer.Stop()
	select {
	case r := <-done:
		if r.err != nil {
			cancel()
			return nil, r.err
		}
		context.AfterFunc(ctx, cancel)
		return r.chans, nil
	case <-timer.C:
		cancel()
		return nil, fmt.Errorf("no answer within %v", subscribeWithin)
	}
}

// tick emits a tick every PollEvery until ctx ends.
func (d *Dashboard) tick(ctx context.Context, emit func(event)) {
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
}

func forward(ctx context.Context, ch <-chan delta.Delta, out chan<- event) {
	for {
		var e event
		select {
		case <-ctx.Done():
			return
		case dl, ok := <-ch:
			if !ok {
				return
			}
			e = event{Kind: "change", Table: dl.Table, Key: dl.Key, Run: runOf(dl)}
			if dl.Op == delta.Resync {
				e = event{Kind: "resync", Table: dl.Table}
			}
		}
		select {
		case <-ctx.Done():
			return
		case out <- e:
		}
	}
}

// coalesce emits the first event at once and the ones that follow within
// gap as one, at the gap's end: it names a table and a run only when every
// event it stands for does, and is a resync when one of them is.
func coalesce(ctx context.Context, in <-chan event, gap time.Duration, emit func(event)) {
	t := time.NewTimer(gap)
	t.Stop()
	var pending *event
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case e := <-in:
			if pending != nil {
				*pending = merge(*pending, e)
				continue
			}
			if wait := gap - time.Since(last); wait > 0 {
				pending = &e
				t.Reset(wait)
				continue
			}
			emit(e)
			last = time.Now()
		case <-t.C:
			if pending != nil {
				emit(*pending)
				pending = nil
				last = time.Now()
			}
		}
	}
}

func merge(a, b event) event {
	if b.Kind == "resync" {
		a.Kind = "resync"
	}
	if a.Table != b.Table {
		a.Table = ""
	}
	if a.Run != b.Run {
		a.Run = ""
	}
	a.Key = nil
	return a
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
	if d.lazy != nil {
		d.lazy.acquire()
		defer d.lazy.release()
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
