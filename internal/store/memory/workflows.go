package memory

// Workflow runs, journal, signals and introspection in memory.

import (
	"context"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

type wfState struct {
	execs    map[string]*store.Execution
	starts   map[string]store.StartContext
	journal  map[string]map[int]store.JournalEntry
	signals  map[string]map[string]store.Signal
	runs     map[string]store.RunRecord
	steps    map[string][]store.StepRecord
	events   map[string][]store.EventRecord
	sequence []string // execution ids in creation order
}

func (s *Store) wf() *wfState {
	if s.wfs == nil {
		s.wfs = &wfState{
			execs: map[string]*store.Execution{}, starts: map[string]store.StartContext{},
			journal: map[string]map[int]store.JournalEntry{}, signals: map[string]map[string]store.Signal{},
			runs: map[string]store.RunRecord{}, steps: map[string][]store.StepRecord{}, events: map[string][]store.EventRecord{},
		}
	}
	return s.wfs
}

func copyExec(x *store.Execution) store.Execution {
	c := *x
	c.Input, c.Output, c.Error = slices.Clone(x.Input), slices.Clone(x.Output), slices.Clone(x.Error)
	return c
}

func (s *Store) StartExecution(ctx context.Context, x store.Execution, sc store.StartContext, start *store.Message, claim *store.EnqueueClaim) (store.Execution, bool, store.EnqueueResult, error) {
	s.mu.Lock()
	w := s.wf()
	if old := w.execs[x.ID]; old != nil {
		c := copyExec(old)
		s.mu.Unlock()
		return c, true, store.EnqueueResult{}, nil
	}
	now := s.now()
	c := x
	c.Input = slices.Clone(x.Input)
	c.Status = store.ExecRunning
	if x.Queue != "" {
		c.Status = store.ExecQueued
		c.DequeuedAt = time.Time{}
	}
	c.CreatedAt, c.UpdatedAt = now, now
	w.execs[x.ID] = &c
	w.sequence = append(w.sequence, x.ID)
	sc.ExecutionID = x.ID
	w.starts[x.ID] = sc
	// copied under the lock: once the start message is in, the run can be
	// executing and writing that row
	out := copyExec(&c)
	if start == nil {
		s.mu.Unlock()
		return out, false, store.EnqueueResult{}, nil
	}
	s.mu.Unlock()
	// The memory store's mutex is not reentrant; enqueue under its own lock.
	// Nothing can observe the gap: the message is what runs the execution.
	res, err := s.Enqueue(ctx, start, claim)
	return out, false, res, err
}

func (s *Store) GetExecution(_ context.Context, id string) (store.Execution, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	x := s.wf().execs[id]
	if x == nil {
		return store.Execution{}, errs.New(errs.CodeNotFound, "no workflow execution %q", id)
	}
	return copyExec(x), nil
}

func (s *Store) PollExecutions(_ context.Context, ids []string) ([]store.Execution, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]store.Execution, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if x := s.wf().execs[id]; x != nil && !seen[id] {
			seen[id] = true
			c := copyExec(x)
			if !c.Status.Terminal() {
				c.Input = nil
			}
			out = append(out, c)
		}
	}
	return out, nil
}

func (s *Store) GetStartContext(_ context.Context, id string) (store.StartContext, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, ok := s.wf().starts[id]
	if !ok {
		return sc, errs.New(errs.CodeNotFound, "no start context for %q", id)
	}
	return sc, nil
}

func (s *Store) ListExecutions(_ context.Context, f store.ExecutionFilter) ([]store.Execution, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.wf()
	var out []store.Execution
	start := len(w.sequence) - 1
	if f.After != nil {
		// after the cursor's run in creation order; a deleted one by time
		if i := slices.Index(w.sequence, f.After.ID); i >= 0 {
			start = i - 1
		}
	}
	for i := start; i >= 0; i-- {
		x := w.execs[w.sequence[i]]
		if (f.Status != "" && x.Status != f.Status) || (f.Name != "" && x.Name != f.Name) || (f.ParentID != "" && x.ParentID != f.ParentID) || (f.Queue != "" && x.Queue != f.Queue) {
			continue
		}
		if (!f.Since.IsZero() && x.CreatedAt.Before(f.Since)) || (!f.Until.IsZero() && !x.CreatedAt.Before(f.Until)) {
			continue
		}
		if f.After != nil && start == len(w.sequence)-1 && !x.CreatedAt.Before(f.After.CreatedAt) {
			continue
		}
		out = append(out, copyExec(x))
		if f.Limit > 0 && len(out) >= f.Limit {
			break
		}
	}
	return out, nil
}

func (s *Store) Journal(_ context.Context, id string) ([]store.JournalEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.JournalEntry
	for _, e := range s.wf().journal[id] {
		c := e
		c.Result, c.Error = slices.Clone(e.Result), slices.Clone(e.Error)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, nil
}

// WriteRuns applies the writes under the store's lock, each judged on its
// own as a database transaction would.
func (s *Store) WriteRuns(_ context.Context, ws []store.RunWrite) ([]error, error) {
	for _, w := range ws {
		if err := store.CheckRunWrite(w); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]error, len(ws))
	for i, w := range ws {
		out[i] = s.writeRunLocked(w)
	}
	return out, nil
}

func (s *Store) writeRunLocked(rw store.RunWrite) error {
	id := rw.ExecutionID()
	if !s.ownsLocked(rw.Shard, rw.Fence.Owner, rw.Fence.Epoch) {
		return errs.New(errs.CodeFenced, "write for %s: shard %s is not held by %s at epoch %d", id, rw.Shard, rw.Fence.Owner, rw.Fence.Epoch)
	}
	w := s.wf()
	x := w.execs[id]
	if x == nil {
		return errs.New(errs.CodeNotFound, "no workflow execution %q", id)
	}
	now := s.now()
	if e := rw.Entry; e != nil {
		j := w.journal[id]
		if j == nil {
			j = map[int]store.JournalEntry{}
			w.journal[id] = j
		}
		if _, ok := j[e.Seq]; ok {
			return errs.New(errs.CodeAlreadyExists, "journal entry %s#%d exists", id, e.Seq)
		}
		c := *e
		c.Result, c.Error = slices.Clone(e.Result), slices.Clone(e.Error)
		if c.FinishedAt.IsZero() {
			c.FinishedAt = now
		}
		j[e.Seq] = c
	}
	u := rw.Update
	if u == nil {
		return nil
	}
	if x.Status.Terminal() {
		return errs.New(errs.CodeAlreadyExists, "workflow execution %q is already %s", id, x.Status)
	}
	x.Status, x.WaitingOn, x.UpdatedAt = u.Status, u.WaitingOn, now
	if u.Runner != "" {
		x.Runner = u.Runner
	}
	if u.Status.Terminal() {
		x.Output, x.Error, x.FinishedAt = slices.Clone(u.Output), slices.Clone(u.Error), now
	}
	if rw.Message == 0 {
		return nil
	}
	m := s.messages[rw.Message]
	if m == nil || m.Shard != rw.Shard || m.State != store.StateClaimed || m.ClaimedBy != rw.Fence.Owner || m.ClaimEpoch != rw.Fence.Epoch {
		return errs.New(errs.CodeFenced, "workflow execution %q was written, but message %d is not claimed by %s at epoch %d", id, rw.Message, rw.Fence.Owner, rw.Fence.Epoch)
	}
	m.State, m.ProcessedAt, m.ClaimExpiresAt = store.StateProcessed, now, time.Time{}
	if _, exists := s.replies[m.ID]; !exists {
		s.replies[m.ID] = &store.Reply{RequestID: m.ID, CreatedAt: now}
	}
	return nil
}

func (s *Store) SendSignal(ctx context.Context, sig store.Signal, wake *store.Message) (bool, error) {
	s.mu.Lock()
	w := s.wf()
	if w.execs[sig.ExecutionID] == nil {
		s.mu.Unlock()
		return false, errs.New(errs.CodeNotFound, "no workflow execution %q", sig.ExecutionID)
	}
	m := w.signals[sig.ExecutionID]
	if m == nil {
		m = map[string]store.Signal{}
		w.signals[sig.ExecutionID] = m
	}
	if _, ok := m[sig.Name]; ok {
		s.mu.Unlock()
		return false, nil
	}
	sig.Payload = slices.Clone(sig.Payload)
	sig.CreatedAt = s.now()
	m[sig.Name] = sig
	s.mu.Unlock()
	_, err := s.Enqueue(ctx, wake, nil)
	return true, err
}

func (s *Store) GetSignal(_ context.Context, id, name string) (*store.Signal, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sig, ok := s.wf().signals[id][name]
	if !ok {
		return nil, nil
	}
	sig.Payload = slices.Clone(sig.Payload)
	return &sig, nil
}

func (s *Store) ListSignals(_ context.Context, id string) ([]store.Signal, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Signal
	for _, sig := range s.wf().signals[id] {
		sig.Payload = slices.Clone(sig.Payload)
		out = append(out, sig)
	}
	slices.SortFunc(out, func(a, b store.Signal) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

func (s *Store) RequestCancel(ctx context.Context, id string, wake *store.Message) (bool, error) {
	s.mu.Lock()
	x := s.wf().execs[id]
	if x == nil {
		s.mu.Unlock()
		return false, errs.New(errs.CodeNotFound, "no workflow execution %q", id)
	}
	if x.Status.Terminal() {
		s.mu.Unlock()
		return false, nil
	}
	x.CancelRequested = true
	s.mu.Unlock()
	_, err := s.Enqueue(ctx, wake, nil)
	return true, err
}
