package dashboard

// The JSON reads behind the Cluster and Workflows panels: the status
// report with the shard map, a page of runs, and one run with everything
// it left in the store.

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/status"
	"github.com/voltro/voltro/internal/store"
)

// maxPage bounds a page of runs.
const maxPage = 200

type clusterView struct {
	Report *status.Report `json:"report"`
	Shards []shardView    `json:"shards"`
	// ShardsError says why the shard map could not be read.
	ShardsError string `json:"shardsError,omitempty"`
}

type shardView struct {
	Shard   string `json:"shard"`
	Owner   string `json:"owner"`
	Epoch   int64  `json:"epoch"`
	Expired bool   `json:"expired"`
}

func (d *Dashboard) cluster(w http.ResponseWriter, r *http.Request) {
	if d.c.Cluster == nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "no cluster status source"})
		return
	}
	rep, err := d.c.Cluster(r.Context())
	if err != nil {
		writeErr(w, err)
		return
	}
	v := clusterView{Report: rep, Shards: []shardView{}}
	locks, err := d.c.Store.ShardLocks(r.Context())
	if err != nil {
		v.ShardsError = err.Error()
	}
	for _, l := range locks {
		v.Shards = append(v.Shards, shardView{Shard: l.Shard, Owner: l.Owner, Epoch: l.Epoch, Expired: l.Expired})
	}
	writeJSON(w, http.StatusOK, v)
}

// runSummary is a run in the list.
type runSummary struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Status     string     `json:"status"`
	WaitingOn  string     `json:"waitingOn,omitempty"`
	Runner     string     `json:"runner,omitempty"`
	ParentID   string     `json:"parentId,omitempty"`
	CreatedAt  time.Time  `json:"createdAt"`
	UpdatedAt  time.Time  `json:"updatedAt"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
}

func summaryOf(x store.Execution) runSummary {
	s := runSummary{ID: x.ID, Name: x.Name, Status: string(x.Status), WaitingOn: x.WaitingOn, Runner: x.Runner,
		ParentID: x.ParentID, CreatedAt: x.CreatedAt, UpdatedAt: x.UpdatedAt}
	if !x.FinishedAt.IsZero() {
		f := x.FinishedAt
		s.FinishedAt = &f
	}
	return s
}

type runPage struct {
	Runs []runSummary `json:"runs"`
	// Next continues the listing (?after=Next); "" on the last page.
	Next string `json:"next"`
}

// runs serves a page: ?status=&name=&since=&until= (RFC 3339), ?after= (a
// page's next), ?limit= (default 50).
func (d *Dashboard) runs(w http.ResponseWriter, r *http.Request) {
	f, err := runFilter(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	ws := d.c.Store
	want := f.Limit
	f.Limit++ // one more says whether there is a next page
	xs, err := ws.ListExecutions(r.Context(), f)
	if err != nil {
		writeErr(w, err)
		return
	}
	page := runPage{Runs: []runSummary{}}
	if len(xs) > want {
		xs = xs[:want]
		page.Next = encodeCursor(store.CursorOf(xs[len(xs)-1]))
	}
	for _, x := range xs {
		page.Runs = append(page.Runs, summaryOf(x))
	}
	writeJSON(w, http.StatusOK, page)
}

func runFilter(r *http.Request) (store.ExecutionFilter, error) {
	q := r.URL.Query()
	f := store.ExecutionFilter{Status: store.ExecStatus(q.Get("status")), Name: strings.TrimSpace(q.Get("name")), Limit: 50}
	switch f.Status {
	case "", store.ExecRunning, store.ExecSuspended, store.ExecCompleted, store.ExecFailed, store.ExecCancelled:
	default:
		return f, errs.New(errs.CodeInvalidArgument, "status %q: use running, suspended, completed, failed or cancelled", f.Status)
	}
	for _, b := range []struct {
		key string
		to  *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if s := q.Get(b.key); s != "" {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return f, errs.New(errs.CodeInvalidArgument, "%s %q is not an RFC 3339 time (2026-01-02T15:04:05Z)", b.key, s)
			}
			*b.to = t
		}
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxPage {
			return f, errs.New(errs.CodeInvalidArgument, "limit %q: want 1 to %d", s, maxPage)
		}
		f.Limit = n
	}
	if s := q.Get("after"); s != "" {
		c, err := decodeCursor(s)
		if err != nil {
			return f, err
		}
		f.After = c
	}
	return f, nil
}

// A cursor travels as base64url of "unix-nanos id".
func encodeCursor(c *store.ExecutionCursor) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.CreatedAt.UnixNano(), 10) + " " + c.ID))
}

func decodeCursor(s string) (*store.ExecutionCursor, error) {
	bad := errs.New(errs.CodeInvalidArgument, "after %q is not a cursor this dashboard handed out", s)
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, bad
	}
	ns, id, ok := strings.Cut(string(b), " ")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || id == "" {
		return nil, bad
	}
	return &store.ExecutionCursor{CreatedAt: time.Unix(0, n), ID: id}, nil
}

// runDetail is one run's page.
type runDetail struct {
	runSummary
	Shard           string              `json:"shard"`
	Key             string              `json:"key,omitempty"`
	CancelRequested bool                `json:"cancelRequested"`
	Input           json.RawMessage     `json:"input"`
	Output          json.RawMessage     `json:"output"`
	Error           *errs.Error         `json:"error"`
	Start           *store.StartContext `json:"start"`
	Journal         []journalView       `json:"journal"`
	Attempts        []attemptView       `json:"attempts"`
	Events          []eventView         `json:"events"`
	// Signals are every signal sent to the run: received (journaled by
	// the run) or still pending.
	Signals  []signalView `json:"signals"`
	Children []runSummary `json:"children"`
	Parent   *runSummary  `json:"parent"`
	// Missing names what could not be read, with why.
	Missing []string `json:"missing"`
	// Totals count the journal entries, attempts and events of the run:
	// the lists hold the newest of them only (runTail, or ?more=N).
	Totals runTotals `json:"totals"`
}

type runTotals struct {
	Journal  int `json:"journal"`
	Attempts int `json:"attempts"`
	Events   int `json:"events"`
}

// runTail is how many of a run's newest journal entries, attempts and
// events its page gets by default (?more=N asks for up to maxRunTail): a
// long run's page, re-read on every step, stays the same size.
const (
	runTail    = 200
	maxRunTail = 10000
)

// newest keeps the last n of xs (the lists are oldest first).
func newest[T any](xs []T, n int) []T {
	if len(xs) > n {
		return xs[len(xs)-n:]
	}
	return xs
}

// tailOf reads ?more=N, bounded.
func tailOf(r *http.Request) (int, error) {
	q := r.URL.Query().Get("more")
	if q == "" {
		return runTail, nil
	}
	n, err := strconv.Atoi(q)
	if err != nil || n <= 0 {
		return 0, errs.New(errs.CodeInvalidArgument, "more must be a positive count of entries, not %q", q)
	}
	return min(n, maxRunTail), nil
}

// attemptView is one attempt of a step: who ran it, when, how it ended.
type attemptView struct {
	Seq        int        `json:"seq"`
	Name       string     `json:"name"`
	Kind       string     `json:"kind"`
	Attempt    int        `json:"attempt"`
	Status     string     `json:"status"`
	Runner     string     `json:"runner"`
	ReplicaID  string     `json:"replicaId"`
	Error      string     `json:"error,omitempty"`
	StartedAt  time.Time  `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
}

type eventView struct {
	At        time.Time `json:"at"`
	Kind      string    `json:"kind"`
	Detail    string    `json:"detail,omitempty"`
	ReplicaID string    `json:"replicaId"`
	Runner    string    `json:"runner"`
}

// signalView is one signal of a run: who sent it when, and whether the
// run has taken it in yet.
type signalView struct {
	Name    string          `json:"name"`
	Payload json.RawMessage `json:"payload"`
	// State: pending (stored, not yet taken by the run), received, or
	// timed out (the run stopped waiting; nothing was stored).
	State  string     `json:"state"`
	SentAt *time.Time `json:"sentAt,omitempty"`
	// SentBy and SentFrom are the replica and runner address of the
	// instance that stored it (its "signal" event); "" when unknown.
	SentBy     string     `json:"sentBy"`
	SentFrom   string     `json:"sentFrom"`
	ReceivedAt *time.Time `json:"receivedAt,omitempty"`
	// ReceivedBy is the runner address that journaled it.
	ReceivedBy string `json:"receivedBy,omitempty"`
}

type journalView struct {
	Seq        int             `json:"seq"`
	Kind       string          `json:"kind"`
	Name       string          `json:"name"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *errs.Error     `json:"error,omitempty"`
	Attempts   int             `json:"attempts"`
	Runner     string          `json:"runner"`
	StartedAt  time.Time       `json:"startedAt"`
	FinishedAt time.Time       `json:"finishedAt"`
}

// raw keeps stored JSON as it is and quotes anything else.
func raw(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	if json.Valid(b) {
		return b
	}
	q, _ := json.Marshal(string(b))
	return q
}

func (d *Dashboard) run(w http.ResponseWriter, r *http.Request) {
	ctx, id := r.Context(), r.PathValue("id")
	tail, err := tailOf(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	ws := d.c.Store
	x, err := ws.GetExecution(ctx, id)
	if err != nil {
		writeErr(w, err)
		return
	}
	v := runDetail{runSummary: summaryOf(x), Shard: x.Shard, Key: x.Key, CancelRequested: x.CancelRequested,
		Input: raw(x.Input), Output: raw(x.Output), Error: errs.Decode(x.Error),
		Journal: []journalView{}, Attempts: []attemptView{}, Events: []eventView{},
		Signals: []signalView{}, Children: []runSummary{}, Missing: []string{}}
	miss := func(what string, err error) { v.Missing = append(v.Missing, what+": "+err.Error()) }
	if sc, err := ws.GetStartContext(ctx, id); err == nil {
		v.Start = &sc
	} else {
		miss("start context", err)
	}
	if js, err := ws.Journal(ctx, id); err == nil {
		for _, e := range js {
			jv := journalView{Seq: e.Seq, Kind: string(e.Kind), Name: e.Name, Result: raw(e.Result), Error: errs.Decode(e.Error),
				Attempts: e.Attempts, Runner: e.Runner, StartedAt: e.StartedAt, FinishedAt: e.FinishedAt}
			v.Journal = append(v.Journal, jv)
		}
	} else {
		miss("journal", err)
	}
	if steps, err := ws.RunSteps(ctx, id); err == nil {
		for _, a := range steps {
			av := attemptView{Seq: a.Seq, Name: a.Name, Kind: string(a.Kind), Attempt: a.Attempt, Status: a.Status,
				Runner: a.Runner, ReplicaID: a.ReplicaID, Error: a.Error, StartedAt: a.StartedAt}
			if !a.FinishedAt.IsZero() {
				f := a.FinishedAt
				av.FinishedAt = &f
			}
			v.Attempts = append(v.Attempts, av)
		}
	} else {
		miss("step attempts", err)
	}
	if evs, err := ws.RunEvents(ctx, id); err == nil {
		for _, e := range evs {
			v.Events = append(v.Events, eventView{At: e.At, Kind: e.Kind, Detail: e.Detail, ReplicaID: e.ReplicaID, Runner: e.Runner})
		}
	} else {
		miss("events", err)
	}
	if sigs, err := ws.ListSignals(ctx, id); err == nil {
		v.Signals, v.Events = signalsOf(sigs, v.Journal, v.Attempts, v.Events)
	} else {
		miss("signals", err)
	}
	v.Totals = runTotals{Journal: len(v.Journal), Attempts: len(v.Attempts), Events: len(v.Events)}
	v.Journal, v.Attempts, v.Events = newest(v.Journal, tail), newest(v.Attempts, tail), newest(v.Events, tail)
	if kids, err := ws.ListExecutions(ctx, store.ExecutionFilter{ParentID: id, Limit: maxPage}); err == nil {
		for _, k := range kids {
			v.Children = append(v.Children, summaryOf(k))
		}
	} else {
		miss("children", err)
	}
	if x.ParentID != "" {
		if p, err := ws.GetExecution(ctx, x.ParentID); err == nil {
			s := summaryOf(p)
			v.Parent = &s
		} else {
			miss("parent", err)
		}
	}
	writeJSON(w, http.StatusOK, v)
}
