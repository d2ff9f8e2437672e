package voltrotest

// The test environment: an App on the memory store (or a SQLite file) with
// a virtual clock, started for one test and closed at its end.

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/clock"
	"github.com/voltro/voltro/internal/instance"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
	"github.com/voltro/voltro/internal/testwait"
	"github.com/voltro/voltro/internal/workflow"
)

// epoch is where every Env's clock starts: a fixed instant, so the times a
// test sees (cron ticks, journal stamps) are the same on every run.
func epoch() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }

// settle bounds how long (wall time) Advance and WaitFor wait for the App
// to go quiet or a run to get somewhere before they fail the test.
const settle = 30 * time.Second

// Env is one App under test. Its methods must be called from the test's
// goroutine or from goroutines the test waits for.
type Env struct {
	t     testing.TB
	app   *voltro.App
	clk   *clock.Virtual
	store store.Driver
	inst  *instance.Instance // the App's parts
	logs  *logBuffer

	advances chan *advanceReq // to the clock loop
	waits    chan *wait       // to the clock loop
	stop     context.CancelFunc
	stopped  chan struct{}
}

// New registers items (entities, workflows, schedules) on a new App on the
// memory store, starts it with a virtual clock reading 2026-01-01T00:00:00Z,
// and closes it when the test ends. It fails t if the App does not start.
func New(t testing.TB, items ...voltro.Registrable) *Env {
	t.Helper()
	clk := clock.NewVirtual(epoch())
	return start(t, clk, memory.New(memory.WithClock(clk.Now)), "memory:", items)
}

// NewSQLite is New on a SQLite file in t.TempDir() instead of the memory
// store, for code that writes its own rows and starts runs or sends
// messages in the same transaction: App.DB() is the file's pool, where the
// test creates its tables, and Workflow.StartTx and Entity.SendTx take
// its transactions. The store reads the same virtual clock, and time skips
// as with New. The test's package imports the SQLite driver:
//
//	import _ "github.com/voltro/voltro/driver/sqlite"
//
// Without it, NewSQLite fails t naming that import.
func NewSQLite(t testing.TB, items ...voltro.Registrable) *Env {
	t.Helper()
	return start(t, clock.NewVirtual(epoch()), nil, "sqlite:"+filepath.Join(t.TempDir(), "voltro.db"), items)
}

// start builds the Env on d (nil: the App opens dbURL with clk as its
// store clock, and closes it), registers items and starts the App.
func start(t testing.TB, clk *clock.Virtual, d store.Driver, dbURL string, items []voltro.Registrable) *Env {
	t.Helper()
	log, logs := quietLogger(t)
	e := &Env{
		t: t, clk: clk, store: d, logs: logs,
		advances: make(chan *advanceReq), waits: make(chan *wait), stopped: make(chan struct{}),
	}
	vars := map[string]string{
		"DB_URL": dbURL, "POD_NAME": "voltrotest", "VOLTRO_INSPECT_ADDR": "127.0.0.1:0",
		"VOLTRO_REGISTRY_DIR": t.TempDir(),
	}
	ctx := context.Background()
	// The App's own constructor, given the store (nil: it opens dbURL with
	// clk as the store's clock, and closes it) and the clock.
	setup := voltro.Option(func(s *instance.Setup) {
		s.Store, s.Clock, s.Built = d, clk, func(in *instance.Instance) { e.inst = in }
	})
	app, err := voltro.New(ctx, setup, voltro.WithEnv(func(k string) string { return vars[k] }), voltro.WithLogger(log))
	if err != nil {
		t.Fatalf("voltrotest: building the app: %v", err)
	}
	e.app = app
	e.store = e.inst.Engine.Store()
	if err := app.Register(items...); err != nil {
		_ = app.Close(context.Background())
		t.Fatalf("voltrotest: registering: %v", err)
	}
	if err := app.Start(ctx); err != nil {
		_ = app.Close(context.Background())
		t.Fatalf("voltrotest: starting the app: %v", err)
	}
	loopCtx, stop := context.WithCancel(context.Background())
	e.stop = stop
	go e.loop(loopCtx)
	t.Cleanup(e.close)
	// A runner hosting no entity type (schedules only) takes no shard.
	hosts := len(e.inst.Engine.Deliverer().Types()) > 0
	testwait.For(t, settle, "the app to hold its shards", func() bool {
		owned, total := app.Shards()
		return !hosts || owned == total
	})
	return e
}

// close stops the clock loop, then the App. Its grace ends as soon as
// nothing holds the clock: what is left sleeps on a clock that will not
// move again (a step in its backoff), and is cancelled rather than waited
// for.
func (e *Env) close() {
	e.stop()
	<-e.stopped
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		defer cancel()
		tick := time.NewTicker(recheck)
		defer tick.Stop()
		deadline := time.After(settle)
		for e.clk.State().Holds > 0 {
			select {
			case <-ctx.Done():
				return
			case <-deadline:
				return
			case <-e.clk.Changed():
			case <-tick.C:
			}
		}
	}()
	if err := e.app.Close(ctx); err != nil {
		e.t.Errorf("voltrotest: closing the app: %v", err)
	}
}

// App is the App under test: pass it to Start, Run, Request and the rest.
func (e *Env) App() *voltro.App { return e.app }

// Now is the virtual time.
func (e *Env) Now() time.Time { return e.clk.Now() }

// Logs is what the App has logged so far (printed by itself only when the
// test fails).
func (e *Env) Logs() string { return e.logs.String() }

// workflows is the App's workflow runtime.
func (e *Env) workflows() *workflow.Engine {
	e.t.Helper()
	return e.inst.Workflows
}
