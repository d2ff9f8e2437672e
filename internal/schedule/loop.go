// The timer loop of one schedule: sleep until the next tick by the replica's
// clock, then fire it. A tick this replica reaches late is still fired if it
// is at most MissedAfter overdue (a stalled process); older ones are missed.

package schedule

import (
	"context"
	"time"
)

// maxTickScan bounds the walk over ticks that went by while a replica slept.
const maxTickScan = 1_000_000

// loop fires e's ticks until ctx ends. Ticks come from e.spec, never from the
// clock reading, so every replica names a tick by the same instant.
func (s *Scheduler) loop(ctx context.Context, e *entry) {
	boot := s.cfg.Now()
	s.goHeld(func() { s.bootMissed(ctx, e, boot) })
	cursor := boot
	for {
		next := e.spec.Next(cursor)
		if next.IsZero() {
			s.log.Warn("schedule has no further ticks", "schedule", e.Name)
			return
		}
		if !s.sleepUntil(ctx, next) {
			return
		}
		due, dropped := s.dueTicks(e, cursor, s.cfg.Now())
		if dropped > 0 {
			s.dropped(e, dropped)
		}
		if len(due) == 0 {
			continue
		}
		cursor = due[len(due)-1]
		now := s.cfg.Now()
		for _, at := range due[:len(due)-1] {
			s.tick(ctx, e, at, now.Sub(at) > s.cfg.MissedAfter)
		}
		s.tick(ctx, e, cursor, false)
	}
}

// bootMissed looks, once the fleet has had BootGrace to record what it fired,
// for ticks between the last one recorded by any replica and this replica's
// start, and treats them as missed.
func (s *Scheduler) bootMissed(ctx context.Context, e *entry, boot time.Time) {
	if s.cfg.Clock.Sleep(ctx, s.cfg.BootGrace) != nil {
		return
	}
	last, ok, err := s.cfg.Store.LastScheduledAt(ctx, e.Name, boot)
	if err != nil {
		s.log.Warn("schedule: cannot look for ticks missed before start", "schedule", e.Name, "err", err)
		return
	}
	if !ok {
		return
	}
	due, dropped := s.dueTicks(e, last, boot)
	if len(due) > s.cfg.CatchUpLimit {
		dropped += len(due) - s.cfg.CatchUpLimit
		due = due[len(due)-s.cfg.CatchUpLimit:]
	}
	if dropped > 0 {
		s.dropped(e, dropped)
	}
	for _, at := range due {
		s.tick(ctx, e, at, true)
	}
}

// dueTicks returns the ticks in (after, now], oldest first: at most
// CatchUpLimit+1 of them, none older than the claim horizon (a claim must
// outlive every attempt to take it). dropped counts the ticks left out.
func (s *Scheduler) dueTicks(e *entry, after, now time.Time) (due []time.Time, dropped int) {
	horizon := now.Add(-s.cfg.ClaimRetention / 2)
	keep := s.cfg.CatchUpLimit + 1
	for t, n := e.spec.Next(after), 0; !t.IsZero() && !t.After(now); t, n = e.spec.Next(t), n+1 {
		if n == maxTickScan {
			dropped++ // "at least": a replica asleep for ages does not count them all
			break
		}
		if t.Before(horizon) {
			dropped++
			continue
		}
		due = append(due, t)
		if len(due) > keep {
			due = due[1:]
			dropped++
		}
	}
	return due, dropped
}

// dropped notes ticks missed beyond what is recorded.
func (s *Scheduler) dropped(e *entry, n int) {
	e.count(OutcomeMissed, int64(n))
	s.log.Warn("schedule: ticks missed beyond the catch-up limit or horizon were neither fired nor recorded",
		"schedule", e.Name, "ticks", n, "catchUpLimit", s.cfg.CatchUpLimit)
}

// sleepUntil waits until the replica's clock reads t, re-reading it at least
// every minute so a clock jump (suspend, NTP step) is noticed. It returns
// false when ctx ends first.
func (s *Scheduler) sleepUntil(ctx context.Context, t time.Time) bool {
	if s.ownNow {
		return s.cfg.Clock.SleepUntil(ctx, t) == nil
	}
	for {
		d := t.Sub(s.cfg.Now())
		if d <= 0 {
			return true
		}
		if s.cfg.Clock.Sleep(ctx, min(d, time.Minute)) != nil {
			return false
		}
	}
}
