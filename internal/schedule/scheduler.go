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
	runCtx  context.Context // set once Run has started
	wg      sync.WaitGroup  // timer loops and asynchronous runs
	// ownNow: the ticks are timed by Clock itself (Config.Now unset).
	ownNow  bool
	booting func() // releases the clock's hold taken by New
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
	s.booting = cfg.Clock.Hold()
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
	switch d {
	case store.Postgres, store.MariaDB, store.MySQL:
		return AdvisoryLock
	}
	return Single
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
	s.entries[c.Name] = e
	s.order = append(s.order, c.Name)
	ctx := s.runCtx
	s.mu.Unlock()
	if ctx != nil {
		return s.arm(ctx, e)
	}
	return nil
}

// Run records the definitions, arms every schedule and blocks until ctx
// ends and the runs in flight have returned. The functions see ctx, so
// they are asked to stop with it.
func (s *Scheduler) Run(parent context.Context) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errs.New(errs.CodeInvalidArgument, "schedule: Run called twice")
	}
	s.started = true
	s.runCtx = ctx
	armed := make([]*entry, 0, len(s.order))
	for _, name := range s.order {
		armed = append(armed, s.entries[name])
	}
	s.mu.Unlock()
	s.log.Info("schedules starting", "count", len(armed), "defaultCoordination", s.coord, "dialect", s.cfg.Store.Dialect())
	var bootErr error
	for _, e := range armed {
		if bootErr = s.arm(ctx, e); bootErr != nil {
			break
		}
	}
	s.booting()
	s.wg.Add(2)
	go s.heartbeatLoop(ctx)
	go s.gcLoop(ctx)
	if bootErr == nil {
		<-ctx.Done()
	}
	cancel()
	s.wg.Wait()
	return bootErr
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
