package memory

import (
	"context"
	"slices"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

func (s *Store) DeadLetterBacklog(_ context.Context, sel store.BacklogSelect, lastError string, replyErr []byte) (int, error) {
	if sel.EntityType == "" {
		return 0, errs.New(errs.CodeInvalidArgument, "dead-lettering a backlog needs an entity type")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deadLetterBacklogLocked(sel, lastError, replyErr, s.now()), nil
}

func (s *Store) deadLetterBacklogLocked(sel store.BacklogSelect, lastError string, replyErr []byte, now time.Time) int {
	n := 0
	for _, id := range s.order {
		m := s.messages[id]
		if m.EntityType != sel.EntityType || (sel.EntityID != "" && m.EntityID != sel.EntityID) {
			continue
		}
		if m.State != store.StatePending && !(m.State == store.StateClaimed && s.voidClaimLocked(m, now)) {
			continue
		}
		m.State, m.LastError, m.ProcessedAt, m.ClaimExpiresAt = store.StateDead, lastError, now, time.Time{}
		if _, exists := s.replies[id]; !exists {
			s.replies[id] = &store.Reply{RequestID: id, Error: slices.Clone(replyErr), CreatedAt: now}
		}
		n++
	}
	return n
}

func (s *Store) CancelExecution(_ context.Context, c store.ExecutionCancel) (bool, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	x := s.wf().execs[c.ID]
	if x == nil {
		return false, 0, errs.New(errs.CodeNotFound, "no workflow execution %q", c.ID)
	}
	if x.Status.Terminal() {
		return false, 0, nil
	}
	now := s.now()
	x.Status, x.Error, x.CancelRequested, x.WaitingOn = store.ExecCancelled, slices.Clone(c.Error), true, ""
	x.UpdatedAt, x.FinishedAt = now, now
	n := s.deadLetterBacklogLocked(store.BacklogSelect{EntityType: c.EntityType, EntityID: c.ID}, c.LastError, c.ReplyErr, now)
	return true, n, nil
}
