// The Scheduler: configuration, registration and the Run loop that arms one
// timer per schedule.

package schedule

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/voltro/voltro/internal/clock"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// Config configures a Scheduler. Zero durations take the defaults shown.
type Config struct {
	ReplicaID string // this instance's stable name (POD_NAME); required
	Store     Store  // required; its migrations must have run (the engine runs them)
	// Default is the app-wide coordination; "" picks advisoryLock on
	// PostgreSQL and MariaDB/MySQL, single on SQLite and memory.
	Default Coordination
	// Cluster is the workflow engine's seam for cluster coordination; nil
	// (or a store without cluster storage) degrades cluster to single.
	Cluster ClusterFirer
	Logger  *slog.Logger     // default slog.Default()
	Now     func() time.Time // the replica's clock; default Clock.Now
	// Clock times the ticks and is held while a tick is being fired (nil:
	// the wall clock). Housekeeping (heartbeats, GC, the queue's poll)
	// stays on the wall clock.
	Clock clock.Clock

	Heartbeat      time.Duration // 5s: refresh of live run rows; stale after 3 beats
	QueuePoll      time.Duration // 500ms: how often a queued tick looks for the end of the running one
	BootGrace      time.Duration // 5s: wait before looking for ticks missed while the app was down
	MissedAfter    time.Duration // 2s: a tick reached later than this after it was due is missed, not late
	CatchUpLimit   int           // 20: at most this many missed ticks are fired or recorded at once
	GCInterval     time.Duration // 1m: between garbage collections
	ClaimRetention time.Duration // 1h: claims older than this are deleted
	RunRetention   time.Duration // 168h: finished runs older than this are deleted
}

// orDefault returns v unless it is the zero value.
func orDefault[T comparable](v, d T) T {
	var zero T
	if v == zero {
		return d
	}
	return v
}

// Scheduler fires registered schedules on this replica.
type Scheduler struct {
	cfg   Config
	log   *slog.Logger
	coord Coordination // the resolved app-wide default

	mu      sync.Mutex
	entries map[string]*entry
	order   []string
	started bool
	runCtx  context.Context    // set once Start has run
	cancel  context.CancelFunc // ends runCtx (Stop)
	chores  bool               // the heartbeat and GC loops run
	stopped bool               // Stop has begun: nothing is armed after it
	arming  sync.WaitGroup     // Registers arming a schedule (Stop waits)
	wg      sync.WaitGroup     // timer loops and asynchronous runs
	// ownNow: the ticks are timed by Clock itself (Config.Now unset).
	ownNow  bool
	booting func() // releases the clock's hold taken by New (once)
}

// New checks cfg and resolves the app-wide coordination. An unknown
// coordination fails with CodeInvalidConfig.
func New(cfg Config) (*Scheduler, error) {
	if cfg.Store == nil {
		return nil, errs.New(errs.CodeInvalidConfig, "schedule: Config.Store is nil")
	}
	if cfg.ReplicaID == "" {
		return nil, errs.New(errs.CodeInvalidConfig, "schedule: Config.ReplicaID is empty")
	}
	def, err := ParseCoordination(string(cfg.Default))
	if err != nil {
		return nil, err
	}
	cfg.Logger = orDefault(cfg.Logger, slog.Default())
	cfg.Clock = clock.Or(cfg.Clock)
	ownNow := cfg.Now == nil
	if ownNow {
		cfg.Now = cfg.Clock.Now
	}
	cfg.Heartbeat = orDefault(cfg.Heartbeat, 5*time.Second)
	cfg.QueuePoll = orDefault(cfg.QueuePoll, 500*time.Millisecond)
	cfg.BootGrace = orDefault(cfg.BootGrace, 5*time.Second)
	cfg.MissedAfter = orDefault(cfg.MissedAfter, 2*time.Second)
	cfg.CatchUpLimit = orDefault(cfg.CatchUpLimit, 20)
	cfg.GCInterval = orDefault(cfg.GCInterval, time.Minute)
	cfg.ClaimRetention = orDefault(cfg.ClaimRetention, time.Hour)
	cfg.RunRetention = orDefault(cfg.RunRetention, 7*24*time.Hour)
	for _, d := range []time.Duration{cfg.Heartbeat, cfg.QueuePoll, cfg.BootGrace, cfg.MissedAfter, cfg.GCInterval, cfg.ClaimRetention, cfg.RunRetention} {
		if d < 0 {
			return nil, errs.New(errs.CodeInvalidConfig, "schedule: negative duration %s in Config", d)
		}
	}
	if cfg.CatchUpLimit < 0 {
		return nil, errs.New(errs.CodeInvalidConfig, "schedule: negative CatchUpLimit %d", cfg.CatchUpLimit)
	}
	s := &Scheduler{
		cfg:     cfg,
		log:     cfg.Logger.With("replicaId", cfg.ReplicaID),
		entries: map[string]*entry{},
		ownNow:  ownNow,
	}
	// Held from here until Run has armed every schedule: a virtual clock
	// must not move before each loop has read the time it starts from.
	s.booting = sync.OnceFunc(cfg.Clock.Hold())
	s.coord = cmp.Or(def, defaultCoordination(cfg.Store.Dialect()))
	if s.coord == Cluster && !s.clusterAvailable() {
		s.coord = s.clusterFallback()
		s.log.Warn("schedules: cluster coordination is unavailable here, degrading the default to "+string(s.coord),
			"dialect", cfg.Store.Dialect(), "reason", s.clusterUnavailableReason())
	}
	return s, nil
}

// defaultCoordination is advisoryLock where several processes share the
// store, single where they cannot.
func defaultCoordination(d store.Dialect) Coordination {
	if d.Shared() {
		return AdvisoryLock
	}
	return Single
}

// Registered is how many schedules are registered.
func (s *Scheduler) Registered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// DefaultCoordination is the app-wide coordination as resolved.
func (s *Scheduler) DefaultCoordination() Coordination { return s.coord }

// Register validates sch and adds it. Invalid input fails with
// CodeInvalidArgument (expression, zone, name, function) or CodeInvalidConfig
// (coordination, overlap); a second schedule of one name with
// CodeAlreadyExists. A schedule registered while Run runs is armed at once.
func (s *Scheduler) Register(sch Schedule) error {
	c, err := compile(sch)
	if err != nil {
		return err
	}
	e := &entry{compiled: c, coord: cmp.Or(c.Coordination, s.coord), wake: make(chan struct{}, 1)}
	if e.coord == Cluster && !s.clusterAvailable() {
		e.coord = s.clusterFallback()
		s.log.Warn("schedule: cluster coordination is unavailable here, firing as "+string(e.coord),
			"schedule", c.Name, "dialect", s.cfg.Store.Dialect(), "reason", s.clusterUnavailableReason())
	}
	s.mu.Lock()
	if _, dup := s.entries[c.Name]; dup {
		s.mu.Unlock()
		return errs.New(errs.CodeAlreadyExists, "schedule %q is registered already", c.Name)
	}
	if s.stopped {
		s.mu.Unlock()
		return errs.New(errs.CodeUnavailable, "schedule %q: the scheduler has stopped", c.Name)
	}
	s.entries[c.Name] = e
	s.order = append(s.order, c.Name)
	ctx := s.runCtx
	if ctx != nil {
		s.arming.Add(1)
	}
	s.mu.Unlock()
	if ctx != nil {
		defer s.arming.Done()
		s.startChores(ctx, 1)
		return s.arm(ctx, e)
	}
	return nil
}

// Run is Start, then Stop once ctx ends: it blocks until the runs in
// flight have returned.
func (s *Scheduler) Run(ctx context.Context) error {
	if err := s.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	return s.Stop(context.WithoutCancel(ctx))
}

// Start records the definitions and arms every schedule registered so far;
// those registered later are armed as they come. The functions see a
// context with ctx's values that Stop cancels. A scheduler with nothing to
// fire does no work (no heartbeats, no garbage collection) until its
// first schedule.
func (s *Scheduler) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errs.New(errs.CodeInvalidArgument, "schedule: started twice")
	}
	s.started = true
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.runCtx, s.cancel = runCtx, cancel
	armed := make([]*entry, 0, len(s.order))
	for _, name := range s.order {
		armed = append(armed, s.entries[name])
	}
	s.mu.Unlock()
	var bootErr error
	if len(armed) > 0 {
		s.startChores(runCtx, len(armed))
		for _, e := range armed {
			if bootErr = s.arm(runCtx, e); bootErr != nil {
				break
			}
		}
	}
	s.booting()
	if bootErr != nil {
		_ = s.Stop(ctx)
		return bootErr
	}
	return nil
}

// startChores logs the start and runs the heartbeat and GC loops, once:
// at Start, or at the first schedule registered after it.
func (s *Scheduler) startChores(ctx context.Context, count int) {
	s.mu.Lock()
	if s.chores {
		s.mu.Unlock()
		return
	}
	s.chores = true
	s.mu.Unlock()
	s.log.Info("schedules starting", "count", count, "defaultCoordination", s.coord, "dialect", s.cfg.Store.Dialect())
	s.wg.Add(2)
	go s.heartbeatLoop(ctx)
	go s.gcLoop(ctx)
}

// Stop cancels the functions' context and waits until every timer loop
// and run in flight has returned. A scheduler never started releases the
// clock it held.
func (s *Scheduler) Stop(context.Context) error {
	s.booting()
	s.mu.Lock()
	cancel := s.cancel
	s.stopped = true
	s.mu.Unlock()
	if cancel == nil {
		return nil
	}
	s.arming.Wait() // a Register under way adds to wg
	cancel()
	s.wg.Wait()
	return nil
}

// arm records e's definition and starts its timer, or hands it to the
// workflow engine in cluster mode.
func (s *Scheduler) arm(ctx context.Context, e *entry) error {
	def := Definition{
		Name: e.Name, Spec: e.Spec, TimeZone: e.TimeZone, Coordination: e.coord,
		Overlap: e.Overlap, CatchUp: e.CatchUp, ReplicaID: s.cfg.ReplicaID,
	}
	if err := s.cfg.Store.DefineSchedule(ctx, def); err != nil {
		return err
	}
	s.log.Info("schedule armed", "schedule", e.Name, "spec", e.Spec, "timeZone", e.TimeZone,
		"coordination", e.coord, "overlap", e.Overlap, "catchUp", e.CatchUp, "next", e.spec.Next(s.cfg.Now()))
	if e.coord == Cluster {
		return s.cfg.Cluster.ScheduleCluster(ctx, s.clusterSchedule(e))
	}
	s.goHeld(func() { s.loop(ctx, e) })
	return nil
}

// goHeld runs f in a goroutine that holds the clock while it is awake
// (it sleeps only through the clock, which lets the hold go meanwhile).
func (s *Scheduler) goHeld(f func()) {
	unhold := s.cfg.Clock.Hold()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer unhold()
		f()
	}()
}

// Stats returns, per schedule, how many ticks this replica recorded per
// outcome since it started (ticks missed beyond CatchUpLimit included).
func (s *Scheduler) Stats() map[string]map[Outcome]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]map[Outcome]int64, len(s.entries))
	for name, e := range s.entries {
		out[name] = e.stats()
	}
	return out
}
