// Background chores of a running Scheduler: heart-beating its live run rows
// and garbage-collecting old claims and runs.
package schedule

import (
	"context"
	"time"
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
		if err := s.cfg.Store.Heartbeat(ctx, s.cfg.ReplicaID); err != nil && ctx.Err() == nil {
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
		res, err := s.cfg.Store.GC(ctx, Retention{Claims: s.cfg.ClaimRetention, Runs: s.cfg.RunRetention, Stale: 4 * s.stale()})
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Warn("schedule: garbage collection failed", "err", err)
		case res != GCResult{}:
			s.log.Debug("schedule: garbage collected", "claims", res.Claims, "runs", res.Runs, "abandoned", res.Abandoned)
		}
	}
}
