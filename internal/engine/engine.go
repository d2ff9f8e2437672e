package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/voltro/voltro/internal/clock"
	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/delivery"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/inspect"
	"github.com/voltro/voltro/internal/observe"
	"github.com/voltro/voltro/internal/registry"
	"github.com/voltro/voltro/internal/retention"
	"github.com/voltro/voltro/internal/rpc"
	"github.com/voltro/voltro/internal/runner"
	"github.com/voltro/voltro/internal/service"
	"github.com/voltro/voltro/internal/store"
)

// Version is reported in the runner row and inspect.
const Version = "0.1.0"

// Options build an Engine.
type Options struct {
	Config config.Config
	// Store, when set, is used instead of opening one from Config.DB (tests
	// share one memory store between engines). The engine does not close it.
	Store store.Driver
	// Open opens the store of Config.DB when Store is nil.
	Open   func(ctx context.Context, cfg config.Config, log *slog.Logger) (store.Driver, error)
	Logger *slog.Logger
	// Telemetry traces deliveries and holds the instance's instruments; nil
	// traces nothing and keeps instruments in a registry of their own.
	Telemetry *observe.Telemetry
	// Facts are what inspect reports about the instance's other parts.
	Facts Facts
	// Client: the engine only writes and reads (starts, signals, cancels):
	// it is never started, hosts nothing, takes no shard and logs no boot
	// lines; it finds a shard's owner in the ledger to wake it.
	Client bool
	// Clock decides when work becomes due (retry backoff, the time the
	// workflow runtime and schedules read); nil is the wall clock. The
	// store keeps its own clock: give both the same one.
	Clock clock.Clock
}

// Engine is one running instance.
type Engine struct {
	cfg        config.Config
	d          store.Driver
	ownsStore  bool
	log        *slog.Logger
	tel        *observe.Telemetry
	lockMode   store.LockMode
	lockReason string
	tier       string
	address    string
	started    time.Time
	clk        clock.Clock

	runner  *runner.Runner
	deliv   *delivery.Deliverer
	sweeper *retention.Sweeper
	client  *rpc.Client
	// secrets sign (the first) and verify (any) runner RPC.
	secrets []string
	wakes   bool // the store pushes wake-ups itself
	ledger  ledgerView
	routes  routes // routed starts (route.go)
	// private: single-process runner storage on a shared SQL store; shard
	// ids carry the replica id (runner.PrivateGroups).
	private    bool
	clientOnly bool // Options.Client

	mu      sync.Mutex
	waiters map[int64][]chan store.Reply
	groups  map[string]string // entity type -> shard group
	drain   drainCache
	refused int64
	facts   Facts

	parts      *service.Sequence // from Start to Stop (lifecycle.go)
	loops      service.Group     // the background loops, the last of parts
	rpcServer  *http.Server
	httpServer *http.Server
	inspectLn  net.Listener
	stopOnce   sync.Once
	extraMux   []func(*http.ServeMux)
	// adminGuesses: wrong admin tokens per source, shared by every admin
	// route of the inspect server.
	adminGuesses *inspect.Guesses
	release      func() error // the SQLite ownership guard

	// bg lives from New to Stop: the commit waiters of transactional
	// writes (tx.go) run under it, counted by watchers.
	bg       context.Context
	stopBG   context.CancelFunc
	watchers sync.WaitGroup
}

// New opens (or takes) the store, migrates it, checks the cluster config and
// resolves the shard-lock mode. Nothing runs until Start.
func New(ctx context.Context, opts Options) (*Engine, error) {
	cfg := opts.Config
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	e := &Engine{cfg: cfg, log: log, tel: opts.Telemetry, facts: opts.Facts, clientOnly: opts.Client, clk: clock.Or(opts.Clock), waiters: map[int64][]chan store.Reply{}, groups: map[string]string{}, adminGuesses: inspect.NewGuesses(log)}
	e.bg, e.stopBG = context.WithCancel(context.Background())
	if e.tel == nil {
		e.tel = observe.New(nil, cfg.ReplicaID)
	}
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	d := opts.Store
	if d == nil {
		if opts.Open == nil {
			return nil, errs.New(errs.CodeInvalidArgument, "engine: neither a store nor a way to open one")
		}
		var err error
		if d, err = opts.Open(ctx, cfg, log); err != nil {
			return nil, err
		}
		e.ownsStore = true
		if ex := d.Capabilities().Exclusive; ex != nil {
			// One executing engine per database (a SQLite file), decided
			// before migrating or reading any message; the OS drops the
			// guard if this process dies.
			if e.release, err = ex.AcquireOwnership(); err != nil {
				_ = d.Close()
				return nil, err
			}
		}
	}
	e.d = d
	fail := func(err error) (*Engine, error) {
		e.stopBG()
		if e.ownsStore {
			_ = d.Close()
		}
		e.releaseOwnership()
		return nil, err
	}
	if err := d.Migrate(ctx); err != nil {
		return fail(fmt.Errorf("voltro: migrating the %s store: %w", d.Dialect(), err))
	}
	want := store.ClusterConfig{ShardCount: cfg.ShardCount, Groups: cfg.Groups}
	got, err := d.EnsureClusterConfig(ctx, want)
	if err != nil {
		return fail(fmt.Errorf("voltro: reading the cluster config: %w", err))
	}
	if got.ShardCount != want.ShardCount || !slices.Equal(got.Groups, want.Groups) {
		return fail(errs.New(errs.CodeClusterMismatch, "this runner is configured with %d shards in groups %v, but the cluster stored in the database has %d shards in groups %v; refusing to start (set VOLTRO_SHARDS / VOLTRO_SHARD_GROUPS to match)", want.ShardCount, want.Groups, got.ShardCount, got.Groups))
	}
	if e.lockMode, e.lockReason, err = d.ResolveLockMode(ctx, cfg.ShardLock); err != nil {
		return fail(err)
	}
	e.private = !cfg.Clustered() && d.Dialect().Shared()
	if e.private {
		// Single-process runner storage on a shared store: a private shard
		// space fenced by row leases of its own, no session locks.
		e.lockMode, e.lockReason = store.LockRow, "single-process runner storage: a private shard space, its epochs kept as row leases; no runner row, no session locks"
	}
	if cfg.Clustered() {
		e.address = cfg.RunnerAddress()
		e.tier = "full"
	} else {
		// Single process: identity is the replica; nothing listens for peers.
		e.address = "local:" + cfg.ReplicaID
		e.tier = "single-process"
		if d.Dialect() == store.Memory {
			e.tier = "none"
		}
	}
	e.wakes = d.Capabilities().Wakes != nil
	if e.secrets, err = clusterSecrets(ctx, cfg, d); err != nil {
		return fail(err)
	}
	e.client = rpc.NewClientWith(rpc.ClientOptions{Secret: e.secrets[0], From: e.address, TLS: cfg.RunnerTLS, Logger: log})
	e.deliv = delivery.New(d, delivery.Options{
		Owner: e.address, PollInterval: e.pollInterval(), ClaimTTL: max(6*cfg.Heartbeat, 30*time.Second),
		Logger: log, OnReply: e.onReply, Clock: e.clk,
	})
	groups := cfg.Groups
	if e.private {
		groups = runner.PrivateGroups(cfg.ReplicaID, cfg.Groups)
	}
	e.runner = runner.New(d, e.deliv, runner.Options{
		Address: e.address, ReplicaID: cfg.ReplicaID, Groups: groups, ShardCount: cfg.ShardCount, Private: e.private,
		Mode: e.lockMode, Heartbeat: cfg.Heartbeat, Version: Version, Logger: log,
		EntityTypes: e.deliv.Types, Meta: registry.RunnerMeta{Process: cfg.ProcessName, PID: os.Getpid(), Host: hostname()}.Encode(),
	})
	e.sweeper = e.newSweeper(d)
	e.parts = e.newParts()
	if !e.clientOnly {
		e.bootLog()
	}
	return e, nil
}

// clusterSecrets: VOLTRO_CLUSTER_SECRET when set, else the random secret
// the first instance stored in the database (every store keeps one; on a
// memory or SQLite store nothing listens for peers anyway).
func clusterSecrets(ctx context.Context, cfg config.Config, d store.Driver) ([]string, error) {
	if s := rpc.ParseSecrets(cfg.ClusterSecret); len(s) > 0 {
		return s, nil
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, errs.Wrap(errs.CodeInternal, err, "generating the cluster secret")
	}
	s, err := d.EnsureClusterSecret(ctx, hex.EncodeToString(b))
	if err != nil {
		return nil, fmt.Errorf("voltro: reading the cluster secret from the %s store: %w", d.Dialect(), err)
	}
	if s == "" {
		return nil, errs.New(errs.CodeInvalidConfig, "the cluster secret stored in the database is empty")
	}
	return []string{s}, nil
}

// pollInterval is the fallback read cadence: slow when the store pushes.
func (e *Engine) pollInterval() time.Duration {
	if e.cfg.PollInterval > 0 {
		return e.cfg.PollInterval
	}
	// Wake-ups (NOTIFY, runner RPC, in process) do the work; polling only
	// catches what a lost wake-up missed, so it can be slow. Timers for
	// delayed messages are armed from the store and do not depend on it.
	if e.wakes {
		return 10 * time.Second
	}
	if e.cfg.Clustered() {
		return 5 * time.Second
	}
	return time.Second
}

func (e *Engine) bootLog() {
	engineKind := "cluster-sql"
	if !e.cfg.Clustered() {
		engineKind = "single-process"
		if e.d.Dialect() == store.Memory {
			engineKind = "in-memory"
		}
	}
	e.log.Info(fmt.Sprintf("workflow engine: %s, dialect=%s", engineKind, e.d.Dialect()),
		"dialect", e.d.Dialect(), "runner_storage", e.cfg.RunnerStorage, "why", e.cfg.StorageReason)
	if e.private {
		e.log.Info(fmt.Sprintf("single-process runner storage: replica %s executes only the runs it starts and resumes them when it restarts with the same POD_NAME; no other instance on this database ever runs them (no cross-instance handoff)", e.cfg.ReplicaID))
	}
	kind := "advisory locks"
	if e.lockMode == store.LockRow {
		kind = "row-based"
	}
	e.log.Info(fmt.Sprintf("shard-lock coordination: %s (dialect=%s, mode=%s, %s)", kind, e.d.Dialect(), e.cfg.ShardLock, e.lockReason),
		"resolved", e.lockMode, "requested", e.cfg.ShardLock)
	e.log.Info(fmt.Sprintf("workflow runner: address=%s replica=%s shards=%d groups=%v", e.address, e.cfg.ReplicaID, e.cfg.ShardCount, e.cfg.Groups),
		"localhost_risk", e.cfg.LocalhostRisk)
	e.logRetention()
	if e.cfg.Clustered() {
		if t := e.cfg.RunnerTLS; t != nil {
			e.log.Info("runner port: "+t.String()+"; calls signed as well", "tls", true, "mutual", t.Mutual())
		} else {
			e.log.Info("runner port: plain HTTP, calls signed (set VOLTRO_RUNNER_TLS_CERT and VOLTRO_RUNNER_TLS_KEY on every instance for TLS)", "tls", false)
		}
	}
}

// Store is the engine's store.
func (e *Engine) Store() store.Driver { return e.d }

// Clock is the engine's clock (the wall clock unless Options set one).
func (e *Engine) Clock() clock.Clock { return e.clk }

// Logger is the engine's logger.
func (e *Engine) Logger() *slog.Logger { return e.log }

// Config is the resolved configuration.
func (e *Engine) Config() config.Config { return e.cfg }

// Address is the runner address this engine advertises.
func (e *Engine) Address() string { return e.address }

// AdminGuesses counts wrong admin tokens per source for the admin routes
// of the inspect server (observe's and the dashboard's).
func (e *Engine) AdminGuesses() *inspect.Guesses { return e.adminGuesses }

// HandleHTTP lets other parts (workflows, schedules, changes) add routes to
// the inspect server. Call before Start.
func (e *Engine) HandleHTTP(f func(*http.ServeMux)) { e.extraMux = append(e.extraMux, f) }

func (e *Engine) listenRPC() error {
	addr := net.JoinHostPort(bindHost(e.cfg.RunnerHost), fmt.Sprint(e.cfg.RunnerPort))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return errs.Wrap(errs.CodeUnavailable, err, fmt.Sprintf("workflow runner cannot listen on %s (VOLTRO_WORKFLOW_RUNNER_PORT)", addr))
	}
	srv := rpc.NewServer(rpc.Handlers{
		Wake:     e.onRPCWake,
		Reply:    e.onRPCReply,
		Volatile: e.onRPCVolatile,
		Start:    e.onRPCStart,
		RunEnded: e.onRPCRunEnded,
	}, rpc.ServerOptions{
		Self: e.address, Secrets: e.secrets, MaxBody: e.cfg.RPCMaxBody, TLS: e.cfg.RunnerTLS, Logger: e.log,
		Refused: func() {
			e.mu.Lock()
			e.refused++
			e.mu.Unlock()
		},
	})
	e.rpcServer = srv.HTTPServer()
	go func() { _ = e.rpcServer.Serve(srv.Listener(ln)) }()
	return nil
}

// bindHost listens on the advertised host when it is an address or
// localhost, on every interface otherwise (a DNS name of this pod).
func bindHost(host string) string {
	if host == "localhost" {
		return "127.0.0.1"
	}
	if net.ParseIP(host) != nil {
		return host
	}
	return ""
}

func (e *Engine) releaseOwnership() {
	if e.release != nil {
		if err := e.release(); err != nil {
			e.log.Warn("releasing the SQLite ownership guard failed", "err", err)
		}
		e.release = nil
	}
}

func (e *Engine) failWaiters() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for id, ws := range e.waiters {
		for _, w := range ws {
			close(w)
		}
		delete(e.waiters, id)
	}
}

// Runner exposes membership state (status, held shards).
func (e *Engine) Runner() *runner.Runner { return e.runner }

// Deliverer exposes the read loop (registration, stats).
func (e *Engine) Deliverer() *delivery.Deliverer { return e.deliv }

var errClosed = errors.New("voltro: engine closed")

func hostname() string {
	h, _ := os.Hostname()
	return h
}
