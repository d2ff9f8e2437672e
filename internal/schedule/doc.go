// Package schedule runs cron schedules on every replica of an app that shares
// one database, so that each tick fires once across the fleet.
//
// A Schedule is a name, a cron expression, an optional time zone and a
// function, plus options: how the replicas coordinate (single, advisoryLock,
// cluster), what happens when a tick arrives while an earlier run is still
// going (skip, queue, parallel), and whether ticks missed while nobody was
// running are fired late (catch-up).
//
// Every replica derives the same scheduledAt instants from the expression,
// never from its own clock reading, so replicas whose clocks disagree still
// agree on which tick is which. In advisoryLock mode the replicas race to
// insert the claim row name@unixSecond into _voltro_schedule_claims; the
// primary key lets exactly one win. In cluster mode the workflow engine owns
// the clock (see ClusterFirer). Every decision is recorded in
// _voltro_schedule_runs with the replica and its coordination outcome.
//
// The package writes no SQL: it keeps its records through the store
// (store.Schedules, see Store), whose versioned migrations create the
// tables.
package schedule
