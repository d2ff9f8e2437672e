// Reopening a failed or cancelled run (store.Workflows).

package memory

import (
	"context"
	"slices"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

func (s *Store) ReopenExecution(ctx context.Context, id string, from []store.ExecStatus, truncate int, wake *store.Message) (store.ExecStatus, bool, error) {
	s.mu.Lock()
	w := s.wf()
	x := w.execs[id]
	if x == nil {
		s.mu.Unlock()
		return "", false, errs.New(errs.CodeNotFound, "no workflow execution %q", id)
	}
	found := x.Status
	if !slices.Contains(from, found) {
		s.mu.Unlock()
		return found, false, nil
	}
	if truncate >= 0 {
		for seq := range w.journal[id] {
			if seq >= truncate {
				delete(w.journal[id], seq)
			}
		}
	}
	x.Status, x.Output, x.Error, x.FinishedAt = store.ExecRunning, nil, nil, time.Time{}
	x.CancelRequested, x.WaitingOn, x.UpdatedAt = false, "", s.now()
	for mid, m := range s.messages {
		if m.EntityType != wake.EntityType || m.EntityID != id || m.DedupeKey == "" {
			continue
		}
		if m.State == store.StateProcessed || m.State == store.StateDead {
			if s.dedupe[m.DedupeKey] == mid {
				delete(s.dedupe, m.DedupeKey)
			}
			m.DedupeKey = ""
		}
	}
	s.mu.Unlock()
	_, err := s.Enqueue(ctx, wake, nil)
	return found, err == nil, err
}
