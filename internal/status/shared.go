// The footer: shared state read from the database — schedule activity and
// claims, in-flight workflow runs, dead letters, the oldest undelivered
// message and the backlog of entity types no live runner hosts. Every part is read on its own; a part that fails is named in
// Errors and the rest is still shown.

package status

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"time"

	"github.com/voltro/voltro/internal/inspect"
	"github.com/voltro/voltro/internal/store"
)

// ActiveWindow is how far back "recent" schedule activity reaches, in seconds.
const ActiveWindow = 300

// readShared reads the footer from d; a runner whose heartbeat is stale
// old hosts nothing.
func readShared(ctx context.Context, d store.Driver, stale time.Duration) *Shared {
	sh := &Shared{ActiveWindowSeconds: ActiveWindow, Errors: []string{}, Messages: MessageState{UnhostedBacklog: []UnhostedType{}}}
	if ds, err := d.DrainStats(ctx); err != nil {
		sh.Errors = append(sh.Errors, fmt.Sprintf("messages: %v", err))
	} else {
		sh.Messages.DeadLetters, sh.Messages.OldestUndeliveredSeconds = ds.Dead, ds.OldestUndelivered.Seconds()
		if runners, err := d.ListRunners(ctx); err != nil {
			sh.Errors = append(sh.Errors, fmt.Sprintf("unhosted backlog: %v", err))
		} else {
			for _, c := range inspect.UnhostedConditions(ds, store.HostedTypes(runners, stale)) {
				sh.Messages.UnhostedBacklog = append(sh.Messages.UnhostedBacklog, UnhostedType{EntityType: c.EntityType, Messages: c.Messages, OldestSeconds: c.OldestSeconds})
			}
		}
	}
	h, ok := d.(store.SQLDB)
	if !ok {
		return sh
	}
	dl := sqlDialect{name: d.Dialect(), window: ActiveWindow}
	db := h.DB()
	if ok, err := hasTables(ctx, dl, db, "_voltro_schedule_runs", "_voltro_schedule_claims"); err != nil {
		sh.Errors = append(sh.Errors, fmt.Sprintf("schedules: %v", err))
	} else if ok, err = schedulesRecorded(ctx, d, ok); err != nil {
		sh.Errors = append(sh.Errors, fmt.Sprintf("schedules: %v", err))
	} else if ok {
		if s, err := readSchedules(ctx, dl, db); err != nil {
			sh.Errors = append(sh.Errors, fmt.Sprintf("schedules: %v", err))
		} else {
			sh.Schedules = s
		}
	}
	if ok, err := hasTables(ctx, dl, db, "voltro_workflow_executions"); err != nil {
		sh.Errors = append(sh.Errors, fmt.Sprintf("workflows: %v", err))
	} else if ok {
		if w, err := readWorkflows(ctx, dl, db); err != nil {
			sh.Errors = append(sh.Errors, fmt.Sprintf("workflows: %v", err))
		} else {
			sh.Workflows = w
		}
	}
	return sh
}

// schedulesRecorded reports, where the schedule tables exist (tables),
// whether any schedule left a row in them: the migrations create them on
// every database, and the footer of one where no schedule ever ran says so
// (Schedules null) rather than show zeros. A schedule's definition row
// stays, so once one ran the footer shows its activity for good.
func schedulesRecorded(ctx context.Context, d store.Driver, tables bool) (bool, error) {
	ss, ok := d.(store.ScheduleStore)
	if !tables || !ok {
		return tables, nil
	}
	sums, err := ss.ScheduleSummaries(ctx)
	return len(sums) > 0, err
}

func hasTables(ctx context.Context, dl sqlDialect, db *sql.DB, tables ...string) (bool, error) {
	for _, t := range tables {
		ok, err := dl.tableExists(ctx, db, t)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

func readSchedules(ctx context.Context, dl sqlDialect, db *sql.DB) (*ScheduleState, error) {
	s := &ScheduleState{ActiveReplicas: []ReplicaRuns{}, LatestClaims: []Claim{}, RunningByReplica: []ReplicaRuns{}}
	var err error
	if s.ActiveReplicas, err = replicaCounts(ctx, db, dl.sql(`SELECT "replicaId", COUNT(*) FROM "_voltro_schedule_runs"
		WHERE "heartbeatAt" > {recent} OR "finished" > {recent} GROUP BY "replicaId"`)); err != nil {
		return nil, fmt.Errorf("active replicas: %w", err)
	}
	if s.RunningByReplica, err = replicaCounts(ctx, db, dl.sql(`SELECT "replicaId", COUNT(*) FROM "_voltro_schedule_runs"
		WHERE "status" = 'running' GROUP BY "replicaId"`)); err != nil {
		return nil, fmt.Errorf("running runs: %w", err)
	}
	for _, r := range s.RunningByReplica {
		s.Running += r.Runs
	}
	if err := db.QueryRowContext(ctx, dl.sql(`SELECT COUNT(*) FROM "_voltro_schedule_claims" WHERE "claimedAt" > {recent}`)).Scan(&s.RecentClaims); err != nil {
		return nil, fmt.Errorf("recent claims: %w", err)
	}
	rows, err := db.QueryContext(ctx, dl.sql(`SELECT c."schedule", c."replicaId", {age:c."claimedAt"}
		FROM "_voltro_schedule_claims" c
		JOIN (SELECT "schedule", MAX("claimedAt") AS m FROM "_voltro_schedule_claims" GROUP BY "schedule") x
		  ON x."schedule" = c."schedule" AND x.m = c."claimedAt"
		ORDER BY c."schedule", c."replicaId"`))
	if err != nil {
		return nil, fmt.Errorf("latest claims: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var c Claim
		var age sql.NullFloat64
		if err := rows.Scan(&c.Schedule, &c.ReplicaID, &age); err != nil {
			return nil, fmt.Errorf("latest claims: %w", err)
		}
		c.AgeSeconds = max(age.Float64, 0)
		if n := len(s.LatestClaims); n > 0 && s.LatestClaims[n-1].Schedule == c.Schedule {
			continue // two claims in the same millisecond: keep one
		}
		s.LatestClaims = append(s.LatestClaims, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("latest claims: %w", err)
	}
	return s, nil
}

func replicaCounts(ctx context.Context, db *sql.DB, q string) ([]ReplicaRuns, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []ReplicaRuns{}
	for rows.Next() {
		var r ReplicaRuns
		if err := rows.Scan(&r.ReplicaID, &r.Runs); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ReplicaID < out[j].ReplicaID })
	return out, nil
}

func readWorkflows(ctx context.Context, dl sqlDialect, db *sql.DB) (*WorkflowCounts, error) {
	rows, err := db.QueryContext(ctx, dl.sql(`SELECT status, COUNT(*) FROM voltro_workflow_executions
		WHERE status IN ('running', 'suspended') GROUP BY status`))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	w := &WorkflowCounts{}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, err
		}
		if st == "running" {
			w.Running = n
		} else {
			w.Suspended = n
		}
	}
	return w, rows.Err()
}
