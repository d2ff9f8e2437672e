package memory

// Retention in memory: the reference semantics of store.Retention, a batch
// under one lock.

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

func (s *Store) Sweep(_ context.Context, req store.SweepRequest) (store.SweepBatch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.Before.IsZero() {
		return store.SweepBatch{}, nil
	}
	switch req.Kind {
	case store.SweepRuns:
		return s.sweepRunsLocked(req), nil
	case store.SweepProcessed:
		return s.sweepMessagesLocked(req, store.StateProcessed), nil
	case store.SweepDead:
		return s.sweepMessagesLocked(req, store.StateDead), nil
	case store.SweepRunners:
		return s.sweepRunnersLocked(req), nil
	}
	return store.SweepBatch{}, errs.New(errs.CodeInvalidArgument, "unknown sweep kind %q", req.Kind)
}

// pick keeps the first limit keys of eligible (in the order given, or,
// dry run, in key order after req.After) and fills More and Next.
func pick[K any](req store.SweepRequest, eligible []K, key func(K) string) ([]K, store.SweepBatch) {
	var b store.SweepBatch
	if req.DryRun {
		sort.Slice(eligible, func(i, j int) bool { return key(eligible[i]) < key(eligible[j]) })
		eligible = slices.DeleteFunc(eligible, func(k K) bool { return key(k) <= req.After })
	}
	if n := req.BatchLimit(); len(eligible) >= n {
		eligible, b.More = eligible[:n], true
	}
	if req.DryRun && len(eligible) > 0 {
		b.Next = key(eligible[len(eligible)-1])
	}
	return eligible, b
}

// startBlocksLocked reports whether run id's start message keeps it: the
// message is undelivered, or dead since deadBefore or later.
func (s *Store) startBlocksLocked(id string, deadBefore time.Time) bool {
	mid, ok := s.dedupe[store.RunStartKey(id)]
	if !ok {
		return false
	}
	m := s.messages[mid]
	switch m.State {
	case store.StatePending, store.StateClaimed:
		return true
	case store.StateDead:
		return deadBefore.IsZero() || !m.ProcessedAt.Before(deadBefore)
	}
	return false
}

func (s *Store) sweepRunsLocked(req store.SweepRequest) store.SweepBatch {
	w := s.wf()
	var eligible []string
	for _, id := range w.sequence {
		x := w.execs[id]
		if x == nil || !x.Status.Terminal() || !x.FinishedAt.Before(req.Before) {
			continue
		}
		if p := w.execs[x.ParentID]; p != nil && !p.Status.Terminal() {
			continue
		}
		if s.startBlocksLocked(id, req.DeadBefore) {
			continue
		}
		eligible = append(eligible, id)
	}
	ids, b := pick(req, eligible, func(id string) string { return id })
	gone := map[string]bool{}
	for _, id := range ids {
		b.Add(store.TableExecutions, 1)
		b.Add(store.TableJournal, int64(len(w.journal[id])))
		b.Add(store.TableSignals, int64(len(w.signals[id])))
		if _, ok := w.starts[id]; ok {
			b.Add(store.TableStartContexts, 1)
		}
		if _, ok := w.runs[id]; ok {
			b.Add(store.TableRuns, 1)
		}
		b.Add(store.TableRunSteps, int64(len(w.steps[id])))
		b.Add(store.TableRunEvents, int64(len(w.events[id])))
		var msg int64
		if mid, ok := s.dedupe[store.RunStartKey(id)]; ok {
			if m := s.messages[mid]; m.State == store.StateProcessed || m.State == store.StateDead {
				msg = mid
				b.Add(store.TableMessages, 1)
				if s.replies[mid] != nil {
					b.Add(store.TableReplies, 1)
				}
			}
		}
		if req.DryRun {
			continue
		}
		gone[id] = true
		delete(w.execs, id)
		delete(w.journal, id)
		delete(w.signals, id)
		delete(w.starts, id)
		delete(w.runs, id)
		delete(w.steps, id)
		delete(w.events, id)
		if msg != 0 {
			s.deleteMessageLocked(msg)
		}
	}
	if len(gone) > 0 {
		w.sequence = slices.DeleteFunc(w.sequence, func(id string) bool { return gone[id] })
		s.order = slices.DeleteFunc(s.order, func(id int64) bool { return s.messages[id] == nil })
	}
	return b
}

// deleteMessageLocked removes message id and its reply; the caller
// compacts s.order.
func (s *Store) deleteMessageLocked(id int64) {
	if m := s.messages[id]; m != nil && m.DedupeKey != "" && s.dedupe[m.DedupeKey] == id {
		delete(s.dedupe, m.DedupeKey)
	}
	delete(s.messages, id)
	delete(s.replies, id)
}

func (s *Store) sweepMessagesLocked(req store.SweepRequest, state store.MessageState) store.SweepBatch {
	var eligible []int64
	for _, id := range s.order {
		m := s.messages[id]
		if m != nil && m.State == state && m.ProcessedAt.Before(req.Before) {
			eligible = append(eligible, id)
		}
	}
	ids, b := pick(req, eligible, func(id int64) string { return msgKey(id) })
	for _, id := range ids {
		b.Add(store.TableMessages, 1)
		if s.replies[id] != nil {
			b.Add(store.TableReplies, 1)
		}
		if !req.DryRun {
			s.deleteMessageLocked(id)
		}
	}
	if !req.DryRun && len(ids) > 0 {
		s.order = slices.DeleteFunc(s.order, func(id int64) bool { return s.messages[id] == nil })
	}
	return b
}

// msgKey is a message id as a dry-run cursor: fixed width, so that the
// strings sort as the numbers do.
func msgKey(id int64) string { return strconv.FormatInt(id+1e15, 10) }

func (s *Store) sweepRunnersLocked(req store.SweepRequest) store.SweepBatch {
	owners := map[string]bool{}
	for _, l := range s.locks {
		if l.Owner != "" {
			owners[l.Owner] = true
		}
	}
	var eligible []string
	for addr, r := range s.runners {
		if r.LastHeartbeat.Before(req.Before) && !owners[addr] {
			eligible = append(eligible, addr)
		}
	}
	sort.Strings(eligible)
	addrs, b := pick(req, eligible, func(a string) string { return a })
	for _, a := range addrs {
		b.Add(store.TableRunners, 1)
		if !req.DryRun {
			delete(s.runners, a)
		}
	}
	return b
}

func (s *Store) OldestKept(context.Context) (store.Oldest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := store.Oldest{Now: s.now()}
	older := func(cur *time.Time, t time.Time) {
		if !t.IsZero() && (cur.IsZero() || t.Before(*cur)) {
			*cur = t
		}
	}
	for _, x := range s.wf().execs {
		if x.Status.Terminal() {
			older(&o.Run, x.CreatedAt)
		}
	}
	for _, m := range s.messages {
		switch m.State {
		case store.StateProcessed:
			older(&o.Processed, m.ProcessedAt)
		case store.StateDead:
			older(&o.Dead, m.ProcessedAt)
		}
	}
	return o, nil
}
