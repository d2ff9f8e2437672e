// The Cluster, Schedules, Messages and Logs panels, live: each is a topic
// whose answer the server reads once for every page open on it (one
// `cluster status` collection, one drain-stats query, however many tabs),
// again when the change feed reports a change of a table behind it, and
// at a fixed cadence for what no table records (a heartbeat that stops,
// readiness, ages, log lines). A topic runs only while a page streams it.

package dashboard

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/voltro/voltro/internal/cdc/delta"
	"github.com/voltro/voltro/internal/store"
)

// The stream's topics: the panel a page shows (the run page follows the
// workflows topic).
const (
	topicWorkflows = "workflows"
	topicCluster   = "cluster"
	topicSchedules = "schedules"
	topicMessages  = "messages"
	topicLogs      = "logs"
)

// logsEvery is how often the Logs panel's merged tail is read while a page
// shows it: the log rings live in the instances, in no table.
const logsEvery = 2 * time.Second

// panelTopic is a panel read once for all its pages.
type panelTopic struct {
	name string
	// tables are those whose changes may change the answer.
	tables []string
	// matters says whether a change of one of them is worth a read (nil:
	// every change is).
	matters func(delta.Delta) bool
	// every re-reads anyway, at least this often.
	every time.Duration
	// gap is the least time between two reads, however fast tables change.
	gap time.Duration
	// slow, when set, stretches the gap to slow times the last read's
	// duration: a read that is costly (a drain-stats scan of a huge
	// backlog) is made less often.
	slow int
	snap *snapshot
}

// readGap is the least time from a read that took took to the next one.
func (p *panelTopic) readGap(took time.Duration) time.Duration {
	return max(p.gap, time.Duration(p.slow)*took)
}

// topics builds the panel topics from the configuration.
func (d *Dashboard) topics() map[string]*panelTopic {
	hb := d.c.Heartbeat
	mk := func(name string, h http.HandlerFunc, every, gap time.Duration, matters func(delta.Delta) bool, tables ...string) *panelTopic {
		return &panelTopic{name: name, tables: tables, matters: matters, every: every, gap: gap, snap: newSnapshot(d.base, h)}
	}
	ts := map[string]*panelTopic{
		// an instance turns stale by not heartbeating: the collection
		// runs at the heartbeat cadence to see it, and when an instance
		// joins or leaves or a shard changes hands
		topicCluster: mk(topicCluster, d.cluster, hb, 250*time.Millisecond, clusterMatters, store.TableRunners, store.TableShardLocks),
		topicSchedules: mk(topicSchedules, d.schedules, hb, 250*time.Millisecond, nil,
			store.TableSchedules, store.TableScheduleRuns, store.TableScheduleClaims),
		topicMessages: mk(topicMessages, d.messages, hb, 500*time.Millisecond, nil, store.TableMessages),
		topicLogs:     mk(topicLogs, d.logs, max(logsEvery, d.c.PollEvery), 0, nil),
	}
	// every change of voltro_messages kicks the drain stats, whose cost
	// grows with the backlog: at most a tenth of the time goes to them
	ts[topicMessages].slow = 10
	return ts
}

// clusterMatters skips the changes the cadence covers: a runner's
// heartbeat (an update of its row moves only its age) and a lease renewal
// that keeps a shard's owner and epoch.
func clusterMatters(dl delta.Delta) bool {
	if dl.Op != delta.Update {
		return true
	}
	if dl.Table == store.TableRunners {
		return false
	}
	if dl.Row == nil || dl.Old == nil { // keys only (NOTIFY): cannot tell
		return true
	}
	// compared as text: a row image may hold values == cannot compare
	differs := func(col string) bool { return fmt.Sprint(dl.Row[col]) != fmt.Sprint(dl.Old[col]) }
	return differs("owner") || differs("epoch")
}

// panelSource runs p while pages stream it: it follows p's tables on the
// feed where the feed sees them, polls at PollEvery where it does not, and
// tells the pages when the answer changed.
func (d *Dashboard) panelSource(p *panelTopic) source {
	return func(ctx context.Context, emit func(event)) string {
		p.snap.activate()
		kick := make(chan struct{}, 1)
		every, mode := p.every, "poll "+p.every.String()
		if len(p.tables) > 0 {
			if d.follow(ctx, p, kick) {
				mode = "feed " + d.feed().Flavor() + " on " + strings.Join(p.tables, ", ") + "; re-read every " + every.String()
			} else {
				every = min(every, d.c.PollEvery)
				mode = "poll " + every.String()
			}
		}
		go func() {
			defer p.snap.deactivate()
			d.panelLoop(ctx, p, kick, every, emit)
		}()
		return mode
	}
}

// follow subscribes to every table of p, kicking on each change that
// matters; false when the feed cannot see one of them.
func (d *Dashboard) follow(ctx context.Context, p *panelTopic, kick chan<- struct{}) bool {
	f := d.feed()
	if f == nil || !f.Transport().CrossInstance() {
		return false
	}
	for _, t := range p.tables {
		if !f.Follows(t) {
			return false
		}
	}
	sctx, cancel := context.WithCancel(ctx)
	var chans []<-chan delta.Delta
	for _, t := range p.tables {
		ch, err := f.Subscribe(sctx, t, nil)
		if err != nil {
			cancel()
			d.c.Logger.Warn("dashboard: the change feed cannot follow a panel's table; polling instead", "panel", p.name, "table", t, "err", err)
			return false
		}
		chans = append(chans, ch)
	}
	context.AfterFunc(ctx, cancel)
	for _, ch := range chans {
		go func() {
			for dl := range ch {
				if dl.Op == delta.Resync || p.matters == nil || p.matters(dl) {
					select {
					case kick <- struct{}{}:
					default:
					}
				}
			}
		}()
	}
	return true
}

// panelLoop reads p at once, on each kick (no sooner than p.readGap after
// the last read) and every `every`, and emits a panel event when the
// answer changed.
func (d *Dashboard) panelLoop(ctx context.Context, p *panelTopic, kick <-chan struct{}, every time.Duration, emit func(event)) {
	t := time.NewTimer(0)
	defer t.Stop()
	var last time.Time
	var took time.Duration
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
			if wait := p.readGap(took) - time.Since(last); wait > 0 {
				t.Reset(wait) // the read waits for the gap; more kicks meanwhile fold into it
				continue
			}
		case <-t.C:
		}
		last = time.Now()
		changed := p.snap.read(ctx)
		took = time.Since(last)
		if changed {
			emit(event{Kind: "panel", Panel: p.name})
		}
		t.Reset(max(every, p.readGap(took))) // the cadence too waits out a costly read
	}
}

// answer is a recorded JSON answer.
type answer struct {
	code int
	body []byte
}

// snapshot is a panel's last answer, read once for every concurrent
// caller; while its topic runs, the topic keeps it fresh and the pages'
// GETs are served from it.
type snapshot struct {
	base   context.Context
	h      http.HandlerFunc
	mu     sync.Mutex
	last   *answer
	live   int
	flight chan struct{} // closed when the read in flight ends
}

func newSnapshot(base context.Context, h http.HandlerFunc) *snapshot {
	return &snapshot{base: base, h: h}
}

// activate marks the topic running; what was kept before is dropped, so a
// page never gets an answer older than the topic's first read.
func (s *snapshot) activate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.live++
	s.last = nil
}

func (s *snapshot) deactivate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.live--
}

// read runs the panel's handler once (a caller arriving meanwhile waits
// for the same read) and reports whether the answer changed.
func (s *snapshot) read(ctx context.Context) bool {
	s.mu.Lock()
	if ch := s.flight; ch != nil {
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		return false
	}
	ch := make(chan struct{})
	s.flight = ch
	prev := s.last
	s.mu.Unlock()
	a := s.record()
	s.mu.Lock()
	s.last, s.flight = &a, nil
	s.mu.Unlock()
	close(ch)
	return prev == nil || prev.code != a.code || !bytes.Equal(prev.body, a.body)
}

// record runs the handler on the dashboard's context (not a page's: the
// answer is everyone's), bounded.
func (s *snapshot) record() answer {
	ctx, cancel := context.WithTimeout(s.base, 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
	rec := &recorder{h: http.Header{}}
	s.h(rec, req)
	if rec.code == 0 {
		rec.code = http.StatusOK
	}
	return answer{code: rec.code, body: rec.buf.Bytes()}
}

// serve answers a page: from the kept answer while the topic runs, from a
// read of its own (shared with concurrent ones) otherwise.
func (s *snapshot) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	a := s.last
	if s.live == 0 {
		a = nil
	}
	s.mu.Unlock()
	if a == nil {
		s.read(r.Context())
		s.mu.Lock()
		a = s.last
		s.mu.Unlock()
	}
	if a == nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "the dashboard is shutting down"})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(a.code)
	_, _ = w.Write(a.body)
}

// recorder keeps what a handler writes.
type recorder struct {
	h    http.Header
	code int
	buf  bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.h }

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.buf.Write(b)
}
