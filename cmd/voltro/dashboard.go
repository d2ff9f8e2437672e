package main

// voltro dashboard: the instances' dashboard served from any machine that
// reaches DB_URL's database and the instances' inspect endpoints.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/voltro/voltro/internal/cdc"
	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/dashboard"
	"github.com/voltro/voltro/internal/dburl"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/inspect"
	"github.com/voltro/voltro/internal/rpc"
	"github.com/voltro/voltro/internal/workflow"
)

const dashboardUsage = `usage: voltro dashboard [--addr HOST:PORT]

Serves the dashboard (Cluster, Workflows, Schedules, Messages, Logs) at
http://HOST:PORT/_voltro/ui/ for DB_URL's cluster, as every instance does
on its inspect server. Reads the database and the instances' inspect
endpoints; VOLTRO_INSPECT_TOKEN guards its reads (and is sent to trusted
inspect hosts, VOLTRO_INSPECT_TRUSTED_HOSTS), VOLTRO_ADMIN_TOKEN enables
its actions. Changes arrive through the change feed (CDC, VOLTRO_CDC_URL)
or, without one, a poll while a page is open.`

func runDashboard(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	fs := flags("dashboard", "dashboard [--addr HOST:PORT]", stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, dashboardUsage) }
	addr := fs.String("addr", "127.0.0.1:8780", "where to listen (loopback unless you set VOLTRO_INSPECT_TOKEN)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return errUsage
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	d, cfg, err := openStore(ctx, env, "")
	if err != nil {
		return err
	}
	defer d.Close()
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return errs.Wrap(errs.CodeInvalidArgument, err, "--addr "+*addr)
	}
	if cfg.InspectToken == "" && !config.IsLoopbackHost(host) {
		log.Warn("the dashboard listens beyond loopback without VOLTRO_INSPECT_TOKEN: anyone who reaches it reads the cluster", "addr", *addr)
	}
	c := dashboard.Config{Store: d, AdminToken: cfg.AdminToken, ReadOnly: dashboard.ReadOnly(cfg.InspectToken), Logger: log}
	dashboard.Sources(&c, d, cfg)
	c.Workflows = lazyWorkflows(env)
	if fc, err := cdc.WatchConfig(env); err == nil {
		// opened on the first page's stream, closed after the last: with no
		// page open the dashboard holds no LISTEN connection, no binlog dump
		fc.Logger = log
		c.OpenFeed = func(ctx context.Context) (*cdc.Feed, error) { return cdc.Open(ctx, fc) }
	}
	dash, err := dashboard.New(c)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return errs.Wrap(errs.CodeUnavailable, err, "dashboard cannot listen on "+*addr)
	}
	// The inspect server's limits and Host check: without a token, a page
	// of another site that rebinds its name to this address gets a 421.
	hosts := inspect.HostCheck{Token: cfg.InspectToken, Trust: cfg.InspectTrust, Listen: *addr}
	srv := rpc.Bounded(hosts.Wrap(dash.Handler()), cfg.RPCMaxBody, rpc.DefaultPerPeer, 0, log)
	fmt.Fprintf(stdout, "voltro dashboard for %s on http://%s%s\n", dburl.Redact(cfg.DB.URL), ln.Addr(), dashboard.Prefix)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	dash.Close()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// lazyWorkflows opens the workflow client (as `voltro workflows` does) on
// the first action, and keeps it.
func lazyWorkflows(env func(string) string) func(context.Context) (*workflow.Engine, error) {
	var mu sync.Mutex
	var w *workflow.Engine
	return func(ctx context.Context) (*workflow.Engine, error) {
		mu.Lock()
		defer mu.Unlock()
		if w != nil {
			return w, nil
		}
		var err error
		w, _, err = workflowClient(context.WithoutCancel(ctx), env)
		return w, err
	}
}
