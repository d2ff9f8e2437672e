package voltro

// Schedules: cron expressions that fire once across the fleet. Coordination
// is single (always fire), advisoryLock (a claims row per tick decides; the
// default on SQL stores) or cluster (the owner of the schedule's shard fires
// it through the workflow engine).

import (
	"context"
	"time"

	"github.com/voltro/voltro/internal/schedule"
)

// Schedule is a registered cron schedule.
type Schedule struct {
	s schedule.Schedule
}

// ScheduleOption tunes a schedule (Coordination, Overlap, CatchUp,
// InTimeZone).
type ScheduleOption func(*scheduleOptions)

// scheduleOptions is the schedule the options set fields of.
type scheduleOptions struct{ schedule.Schedule }

// ScheduleCoordination says how the instances of an app agree on which one
// fires a tick. The app-wide default is VOLTRO_SCHEDULE_COORDINATION, else
// CoordinationAdvisoryLock on a SQL store and CoordinationSingle on memory.
type ScheduleCoordination string

// Schedule coordinations.
const (
	// CoordinationSingle fires on every instance that registers the
	// schedule: one instance, or dev.
	CoordinationSingle ScheduleCoordination = "single"
	// CoordinationAdvisoryLock fires on the instance that claims the tick
	// first (a claims row per tick).
	CoordinationAdvisoryLock ScheduleCoordination = "advisoryLock"
	// CoordinationCluster fires the tick on the owner of the schedule's
	// shard, through the workflow engine (clustered apps only).
	CoordinationCluster ScheduleCoordination = "cluster"
)

// Coordination overrides the app-wide default coordination for this
// schedule. An unknown value fails Register with an invalid_config error.
func Coordination(c ScheduleCoordination) ScheduleOption {
	return func(s *scheduleOptions) { s.Coordination = schedule.Coordination(c) }
}

// OverlapPolicy says what a tick does while the schedule's previous run (on
// any instance) still runs.
type OverlapPolicy string

// Overlap policies.
const (
	// OverlapSkip drops the tick, recorded as skipped (the default).
	OverlapSkip OverlapPolicy = "skip"
	// OverlapQueue runs the tick once the running one finishes; at most one
	// waits, later ones are skipped.
	OverlapQueue OverlapPolicy = "queue"
	// OverlapParallel runs every tick regardless.
	OverlapParallel OverlapPolicy = "parallel"
)

// Overlap sets the schedule's overlap policy. An unknown value fails
// Register with an invalid_config error.
func Overlap(o OverlapPolicy) ScheduleOption {
	return func(s *scheduleOptions) { s.Overlap = schedule.Overlap(o) }
}

// CatchUp fires ticks missed while no instance ran, late, instead of
// recording them missed.
func CatchUp() ScheduleOption { return func(s *scheduleOptions) { s.CatchUp = true } }

// InTimeZone reads the expression in an IANA time zone (default UTC).
func InTimeZone(tz string) ScheduleOption { return func(s *scheduleOptions) { s.TimeZone = tz } }

// NewSchedule declares a schedule: a name, a cron expression (5 fields, an
// optional leading seconds field, or a descriptor such as "@every 10s") and
// the function to fire with the tick's scheduled time.
func NewSchedule(name, spec string, fn func(ctx context.Context, scheduledAt time.Time) error, opts ...ScheduleOption) *Schedule {
	o := scheduleOptions{schedule.Schedule{Name: name, Spec: spec, Func: fn}}
	for _, f := range opts {
		f(&o)
	}
	return &Schedule{s: o.Schedule}
}

// register validates and adds the schedule, its firings traced; a
// malformed expression fails here with the expression and what is wrong.
// The caller's value is left alone.
func (s *Schedule) register(a *App) error {
	cp := s.s
	cp.Func = a.e.Telemetry().WrapSchedule(cp.Name, cp.Func)
	return a.in.Scheduler.Register(cp)
}

// ScheduleStats counts one schedule's ticks on this instance since it
// started, by outcome (ticks missed beyond the catch-up limit included).
type ScheduleStats struct {
	Single         int64 // fired with no coordination (CoordinationSingle)
	WonLock        int64 // fired: this instance's claim of the tick won
	LostLock       int64 // not fired here: another instance claimed the tick
	Cluster        int64 // fired by the workflow engine on the schedule's shard owner
	SkippedOverlap int64 // not fired: the previous run was still going (OverlapSkip)
	Queued         int64 // fired once the previous run finished (OverlapQueue)
	Missed         int64 // not fired: no instance ran in time and CatchUp is off
}

// ScheduleStats counts the ticks of each schedule registered here, by
// outcome.
func (a *App) ScheduleStats() map[string]ScheduleStats {
	out := map[string]ScheduleStats{}
	for name, m := range a.in.Scheduler.Stats() {
		out[name] = ScheduleStats{
			Single: m[schedule.OutcomeSingle], WonLock: m[schedule.OutcomeWonLock], LostLock: m[schedule.OutcomeLostLock],
			Cluster: m[schedule.OutcomeCluster], SkippedOverlap: m[schedule.OutcomeSkippedOverlap],
			Queued: m[schedule.OutcomeQueued], Missed: m[schedule.OutcomeMissed],
		}
	}
	return out
}
