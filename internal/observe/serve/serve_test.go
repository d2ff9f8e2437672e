package serve_test

// The observability routes on a PostgreSQL-backed app: metrics after
// deliveries, a workflow and schedule firings; the log ring with its boot
// lines; admin actions refused without or with a wrong token and done with
// the right one; and every inspect route refusing anything but GET.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/observe"
	"github.com/voltro/voltro/internal/observe/obstest"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/testdb"
)

func TestMetricsAndLogsOnPostgres(t *testing.T) {
	obstest.IsolateRegistry(t)
	ctx := obstest.Ctx(t)
	url := testdb.Postgres(t, "obs_metrics")
	echo := voltro.NewEntity("obs.echo", func(ctx context.Context, id string, n int) (int, error) { return n * 2, nil })
	var flaky atomic.Int64
	retry := voltro.NewEntity("obs.retry", func(ctx context.Context, id string, n int) (int, error) {
		if flaky.Add(1) == 1 {
			return 0, errors.New("first delivery fails")
		}
		return n, nil
	}, voltro.Backoff(func(int) time.Duration { return 10 * time.Millisecond }))
	flow := voltro.NewWorkflow("obs.flow", func(wc *voltro.WorkflowContext, n int) (int, error) {
		a, err := voltro.Step(wc, "double", func(ctx context.Context) (int, error) { return 2 * n, nil })
		if err != nil {
			return 0, err
		}
		return voltro.Step(wc, "inc", func(ctx context.Context) (int, error) { return a + 1, nil })
	})
	var fired atomic.Int64
	tick := voltro.NewSchedule("obs.tick", "@every 1s", func(ctx context.Context, at time.Time) error {
		fired.Add(1)
		return nil
	})
	app := obstest.Start(t, url, obstest.App{Replica: "obs-m", Register: func(a *voltro.App) {
		if err := a.Register(echo, retry, flow, tick); err != nil {
			t.Fatal(err)
		}
	}})
	for i := range 5 {
		if got, err := echo.Request(ctx, app, "e1", i); err != nil || got != 2*i {
			t.Fatalf("echo %d = %d, %v", i, got, err)
		}
	}
	if _, err := retry.Request(ctx, app, "r1", 1); err != nil {
		t.Fatal(err)
	}
	if got, err := flow.Run(ctx, app, 20, voltro.WithKey("m1")); err != nil || got != 41 {
		t.Fatalf("workflow = %d, %v", got, err)
	}
	// a message nobody hosts waits on an owned shard: its age is a gauge
	nobody := voltro.NewEntity("obs.nobody", func(ctx context.Context, id string, n int) (int, error) { return n, nil })
	if err := nobody.Send(ctx, app, "n1", 1); err != nil {
		t.Fatal(err)
	}
	obstest.WaitFor(t, 10*time.Second, "a schedule firing", func() bool { return fired.Load() > 0 })

	var body string
	obstest.WaitFor(t, 15*time.Second, "metrics showing every delivery and the waiting message", func() bool {
		code, b := obstest.Call(t, app, http.MethodGet, "/_voltro/metrics", "")
		if code != http.StatusOK {
			t.Fatalf("metrics: %d %s", code, b)
		}
		body = b
		_, ok := obstest.MetricValue(b, `voltro_shard_oldest_deliverable_seconds{`)
		// a reply or a result can be seen before the delivery is counted
		delivered, _ := obstest.MetricValue(b, `voltro_messages_total{outcome="delivered"}`)
		return ok && delivered >= 7
	})
	atLeast := func(prefix string, min float64) {
		t.Helper()
		v, ok := obstest.MetricValue(body, prefix)
		if !ok || v < min {
			t.Errorf("%s = %v (present %v), want >= %v", prefix, v, ok, min)
		}
	}
	atLeast(`voltro_messages_total{outcome="claimed"}`, 7)
	atLeast(`voltro_messages_total{outcome="delivered"}`, 7)
	atLeast(`voltro_messages_total{outcome="retried"}`, 1)
	atLeast(`voltro_messages_total{outcome="dead"}`, 0)
	atLeast(`voltro_messages_total{outcome="released"}`, 0)
	atLeast(`voltro_messages_total{outcome="fenced"}`, 0)
	atLeast(`voltro_owned_shards`, 8)
	atLeast(`voltro_shard_ownership_changes_total`, 8)
	atLeast(`voltro_lock_failures_total`, 0)
	atLeast(`voltro_pool_probe_failures_total`, 0)
	atLeast(`voltro_rpc_refused_total`, 0)
	atLeast(`voltro_workflow_routed_starts_total{outcome="routed"}`, 0)
	// A backlog nobody hosts is a cluster condition: a gauge of its own,
	// never a reason for this instance not to be ready.
	atLeast(`voltro_cluster_unhosted_messages{entity_type="obs.nobody"}`, 1)
	if strings.Contains(body, `voltro_readiness_problems{kind="unhosted_type"}`) {
		t.Errorf("a backlog nobody hosts counted as a readiness problem")
	}
	atLeast(`voltro_shard_pending_messages{`, 1)
	atLeast(`voltro_workflows_started_total{workflow="obs.flow"}`, 1)
	atLeast(`voltro_workflows_finished_total{status="completed",workflow="obs.flow"}`, 1)
	atLeast(`voltro_workflow_replays_total{outcome="done",workflow="obs.flow"}`, 1)
	atLeast(`voltro_workflow_step_attempts_total{result="ok",step="double",workflow="obs.flow"}`, 1)
	atLeast(`voltro_workflow_step_duration_seconds_count{result="ok",step="inc",workflow="obs.flow"}`, 1)
	atLeast(`voltro_workflow_duration_seconds_count{status="completed",workflow="obs.flow"}`, 1)
	atLeast(`voltro_message_handler_duration_seconds_count{entity_type="obs.retry",result="error"}`, 1)
	atLeast(`voltro_schedule_ticks_total{outcome="wonLock",schedule="obs.tick"}`, 1)
	atLeast(`voltro_schedule_run_duration_seconds_count{result="ok",schedule="obs.tick"}`, 1)
	atLeast(`go_goroutines`, 1)
	for _, name := range []string{"voltro_schedule_ticks_total", "voltro_workflow_introspection_dropped_total", "voltro_cluster_dead_messages", "voltro_cluster_unhosted_messages", "voltro_retention_sweeping"} {
		if !strings.Contains(body, "# HELP "+name+" ") {
			t.Errorf("metric %s has no HELP line", name)
		}
	}

	// the ring: boot lines, every schedule firing, workflow starts, shard moves
	code, raw := obstest.Call(t, app, http.MethodGet, "/_voltro/inspect/logs?tail=0", "")
	if code != http.StatusOK {
		t.Fatalf("logs: %d %s", code, raw)
	}
	var recs []observe.Record
	if err := json.Unmarshal([]byte(raw), &recs); err != nil {
		t.Fatal(err)
	}
	has := func(prefix string, boot bool) {
		t.Helper()
		for _, r := range recs {
			if strings.HasPrefix(r.Msg, prefix) && r.Replica == "obs-m" && (!boot || r.Boot) {
				return
			}
		}
		t.Errorf("no record %q (boot %v) in the ring", prefix, boot)
	}
	has("workflow engine: cluster-sql, dialect=postgres", true)
	has("shard-lock coordination:", true)
	has("workflow runner: address=127.0.0.1:", true)
	has("sql dialect resolved: postgres — CDC: ", true)
	has("voltro started: replica=obs-m", true)
	has("schedule fired", false)
	has("workflow started", false)
	has("workflow runner: shard acquired", false)
	// in the order they reached the ring (concurrent loggers may stamp
	// times a hair out of order; voltro logs sorts by time when merging)
	for i := 1; i < len(recs); i++ {
		if recs[i].Seq <= recs[i-1].Seq {
			t.Fatalf("records out of order at %d", i)
		}
	}
	code, raw = obstest.Call(t, app, http.MethodGet, "/_voltro/inspect/logs?tail=2&level=warn&boot=false", "")
	if err := json.Unmarshal([]byte(raw), &recs); code != http.StatusOK || err != nil || len(recs) > 2 {
		t.Fatalf("tail=2 level=warn: %d %v %d records", code, err, len(recs))
	}
	for _, r := range recs {
		if observe.LevelOf(r.Level) < observe.LevelOf("WARN") {
			t.Fatalf("level filter let %s through", r.Level)
		}
	}
	if code, _ := obstest.Call(t, app, http.MethodGet, "/_voltro/inspect/logs?tail=x", ""); code != http.StatusBadRequest {
		t.Fatalf("tail=x answered %d", code)
	}

	// read-only: nothing but GET/HEAD on inspect routes
	for _, path := range []string{"/_voltro/inspect/logs", "/_voltro/metrics", "/_voltro/inspect/cluster", "/_voltro/health/ready", "/_voltro/health/live"} {
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
			if code, b := obstest.Call(t, app, m, path, ""); code != http.StatusMethodNotAllowed {
				t.Errorf("%s %s answered %d %s, want 405", m, path, code, b)
			}
		}
		if code, _ := obstest.Call(t, app, http.MethodHead, path, ""); code >= 400 && path != "/_voltro/health/ready" {
			t.Errorf("HEAD %s answered %d", path, code)
		}
	}
	// no admin token configured: every admin call is refused
	for _, path := range []string{"/_voltro/admin/workflows/x/cancel", "/_voltro/admin/messages/1/replay"} {
		code, b := obstest.Call(t, app, http.MethodPost, path, "anything")
		if code != http.StatusForbidden || !strings.Contains(b, "VOLTRO_ADMIN_TOKEN") {
			t.Errorf("POST %s without a configured token: %d %s", path, code, b)
		}
	}
}

func TestAdminActions(t *testing.T) {
	obstest.IsolateRegistry(t)
	ctx := obstest.Ctx(t)
	url := testdb.Postgres(t, "obs_admin")
	var broken atomic.Bool
	broken.Store(true)
	fragile := voltro.NewEntity("obs.fragile", func(ctx context.Context, id string, n int) (int, error) {
		if broken.Load() {
			return 0, errors.New("not today")
		}
		return n + 1, nil
	}, voltro.MaxAttempts(1))
	waiter := voltro.NewWorkflow("obs.waiter", func(wc *voltro.WorkflowContext, _ int) (string, error) {
		return voltro.AwaitSignal[string](wc, "go", 0)
	})
	const token = "admin-s3cret"
	app := obstest.Start(t, url, obstest.App{Replica: "obs-a", AdminToken: token, Register: func(a *voltro.App) {
		if err := a.Register(fragile, waiter); err != nil {
			t.Fatal(err)
		}
	}})
	d, _ := obstest.OpenStore(t, url)

	// a dead letter
	if _, err := fragile.Request(ctx, app, "f1", 1); err == nil {
		t.Fatal("the fragile entity answered")
	}
	var dead []store.Message
	obstest.WaitFor(t, 10*time.Second, "the dead letter", func() bool {
		var err error
		dead, err = d.ListMessages(ctx, store.MessageFilter{State: store.StateDead, EntityType: "obs.fragile"})
		return err == nil && len(dead) == 1
	})
	replay := "/_voltro/admin/messages/" + strconv.FormatInt(dead[0].ID, 10) + "/replay"

	// a suspended run
	h, err := waiter.Start(ctx, app, 0, voltro.WithKey("w1"))
	if err != nil {
		t.Fatal(err)
	}
	obstest.WaitFor(t, 10*time.Second, "the run to suspend", func() bool {
		s, err := app.Get(ctx, h.ID)
		return err == nil && s.Status == "suspended"
	})
	cancel := "/_voltro/admin/workflows/" + h.ID + "/cancel"

	for _, path := range []string{cancel, replay} {
		if code, b := obstest.Call(t, app, http.MethodPost, path, ""); code != http.StatusUnauthorized || !strings.Contains(b, "missing bearer token") {
			t.Errorf("POST %s without a bearer: %d %s", path, code, b)
		}
		if code, b := obstest.Call(t, app, http.MethodPost, path, "wrong"); code != http.StatusUnauthorized || !strings.Contains(b, "wrong bearer token") {
			t.Errorf("POST %s with a wrong bearer: %d %s", path, code, b)
		}
		if code, _ := obstest.Call(t, app, http.MethodGet, path, token); code != http.StatusMethodNotAllowed {
			t.Errorf("GET %s answered %d, want 405", path, code)
		}
	}
	if s, _ := app.Get(ctx, h.ID); s.Status != "suspended" {
		t.Fatalf("a refused call changed the run: %s", s.Status)
	}
	if m, _ := d.GetMessage(ctx, dead[0].ID); m.State != store.StateDead {
		t.Fatalf("a refused call changed the message: %s", m.State)
	}

	if code, b := obstest.Call(t, app, http.MethodPost, cancel, token); code != http.StatusAccepted {
		t.Fatalf("cancel: %d %s", code, b)
	}
	if _, err := h.Result(ctx); !errors.Is(err, voltro.ErrCancelled) {
		t.Fatalf("cancelled run's result: %v", err)
	}
	broken.Store(false)
	if code, b := obstest.Call(t, app, http.MethodPost, replay, token); code != http.StatusOK {
		t.Fatalf("replay: %d %s", code, b)
	}
	obstest.WaitFor(t, 10*time.Second, "the replayed message to be delivered", func() bool {
		m, err := d.GetMessage(ctx, dead[0].ID)
		return err == nil && m.State == store.StateProcessed
	})
	if code, b := obstest.Call(t, app, http.MethodPost, "/_voltro/admin/messages/999999/replay", token); code != http.StatusNotFound {
		t.Errorf("replaying an unknown message: %d %s", code, b)
	}
	if code, b := obstest.Call(t, app, http.MethodPost, "/_voltro/admin/workflows/wf_nope/cancel", token); code != http.StatusNotFound {
		t.Errorf("cancelling an unknown run: %d %s", code, b)
	}
	// the admin calls are in the log
	_, raw := obstest.Call(t, app, http.MethodGet, "/_voltro/inspect/logs?tail=0&level=info", "")
	if !strings.Contains(raw, "admin: workflow cancel requested") || !strings.Contains(raw, "admin: dead letter replayed") {
		t.Errorf("admin actions are not in the log ring")
	}
}

// TestTierAgrees: an instance on a shared database whose change feed is
// inline emit (CDC=0 here; MySQL, or a binlog fallback, alike) moves shards
// but not changes: inspect and its boot line say "inline-only", as cluster
// status and the dashboard do, and "full" with the feed on.
func TestTierAgrees(t *testing.T) {
	obstest.IsolateRegistry(t)
	url := testdb.Postgres(t, "obs_tier")
	for _, c := range []struct {
		cdc, want string
	}{{"0", "inline-only"}, {"1", "full"}} {
		app := obstest.Start(t, url, obstest.App{Replica: "tier-" + c.cdc, Env: map[string]string{"CDC": c.cdc}})
		code, raw := obstest.Call(t, app, http.MethodGet, "/_voltro/inspect/cluster", "")
		var doc struct {
			Tier string `json:"tier"`
		}
		if err := json.Unmarshal([]byte(raw), &doc); code != http.StatusOK || err != nil {
			t.Fatalf("inspect: %d %v %s", code, err, raw)
		}
		if doc.Tier != c.want {
			t.Errorf("CDC=%s: inspect says tier %q, want %q", c.cdc, doc.Tier, c.want)
		}
		_, logs := obstest.Call(t, app, http.MethodGet, "/_voltro/inspect/logs?tail=0", "")
		if !strings.Contains(logs, "tier="+c.want+" ") {
			t.Errorf("CDC=%s: no boot line with tier=%s in %s", c.cdc, c.want, logs)
		}
		_ = app.Close(context.Background())
	}
}
