// Background chores of a running Scheduler: heart-beating its live run rows
// and garbage-collecting old claims and runs.

package schedule

import (
	"context"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// heartbeatLoop keeps this replica's running and queued rows fresh so other
// replicas count them in overlap checks; a replica that dies stops beating
// and its rows stop counting after three beats.
func (s *Scheduler) heartbeatLoop(ctx context.Context) {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if s.liveRuns() == 0 {
			continue
		}
		if err := s.cfg.Store.HeartbeatScheduleRuns(ctx, s.cfg.ReplicaID); err != nil && ctx.Err() == nil {
			s.log.Warn("schedule: heartbeat failed", "err", err)
		}
	}
}

func (s *Scheduler) liveRuns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, e := range s.entries {
		n += e.live()
	}
	return n
}

// gcLoop deletes expired claims and old runs, and marks abandoned the live
// rows of replicas that went silent. Every replica runs it; the statements
// are idempotent.
func (s *Scheduler) gcLoop(ctx context.Context) {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.GCInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		res, err := s.collect(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Warn("schedule: garbage collection failed", "err", err)
		case res != store.ScheduleGCResult{}:
			s.log.Debug("schedule: garbage collected", "claims", res.Claims, "runs", res.Runs, "abandoned", res.Abandoned)
		}
	}
}

// collect runs one garbage collection with the retentions as cut-offs on
// the store's clock: claims older than ClaimRetention, finished runs older
// than RunRetention, and live runs without a heartbeat for four stale
// periods (abandoned).
func (s *Scheduler) collect(ctx context.Context) (store.ScheduleGCResult, error) {
	now, err := s.cfg.Store.Now(ctx)
	if err != nil {
		return store.ScheduleGCResult{}, err
	}
	return s.cfg.Store.CollectSchedules(ctx, store.ScheduleGC{
		ClaimsBefore: now.Add(-s.cfg.ClaimRetention),
		RunsBefore:   now.Add(-s.cfg.RunRetention),
		StaleBefore:  now.Add(-4 * s.stale()),
	})
}
