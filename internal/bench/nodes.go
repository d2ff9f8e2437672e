package bench

// A benchmark against a multi-primary cluster (Galera): --db lists one URL
// per node, the commit rate is the cluster's (connections spread over the
// nodes, measured in one window) and an instance runs on every node.

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// nodeURLs splits a --db value into the URLs of a cluster's nodes: one URL,
// or several separated by commas.
func nodeURLs(dbURL string) ([]string, error) {
	var out []string
	for _, u := range strings.Split(dbURL, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	if len(out) == 0 {
		return nil, errs.New(errs.CodeInvalidArgument, "no database URL")
	}
	return out, nil
}

// clusterCommitRate measures the single-row commit rate of conns
// connections spread round-robin over the nodes' stores, all in the same
// window, and returns their sum.
func clusterCommitRate(ctx context.Context, nodes []store.Driver, conns int, within time.Duration) (float64, error) {
	if len(nodes) == 1 {
		return commitRate(ctx, nodes[0], conns, within)
	}
	rates := make([]float64, len(nodes))
	errc := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, d := range nodes {
		n := conns / len(nodes)
		if i < conns%len(nodes) {
			n++
		}
		if n == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rates[i], errc[i] = commitRate(ctx, d, n, within)
		}()
	}
	wg.Wait()
	sum := 0.0
	for i := range nodes {
		if errc[i] != nil {
			return 0, fmt.Errorf("node %d: %w", i+1, errc[i])
		}
		sum += rates[i]
	}
	return sum, nil
}

// startPeers opens, registers (register) and starts an instance on each of
// urls, replica bench-2, bench-3, …, each with a runner on a free loopback
// port. On an error the instances started so far are closed.
func startPeers(ctx context.Context, urls []string, env func(string) string, log *slog.Logger, register func(*voltro.App) error) ([]*voltro.App, error) {
	var apps []*voltro.App
	fail := func(err error) ([]*voltro.App, error) {
		closeAll(ctx, apps)
		return nil, err
	}
	for i, u := range urls {
		port, err := freePort()
		if err != nil {
			return fail(err)
		}
		penv := overlay(env, map[string]string{"VOLTRO_WORKFLOW_RUNNER_HOST": "127.0.0.1",
			"VOLTRO_WORKFLOW_RUNNER_PORT": strconv.Itoa(port), "POD_NAME": "bench-" + strconv.Itoa(i+2)})
		app, err := voltro.New(ctx, voltro.WithDB(u), voltro.WithEnv(penv), voltro.WithLogger(log))
		if err != nil {
			return fail(fmt.Errorf("node %d: %w", i+2, err))
		}
		apps = append(apps, app)
		if err := register(app); err != nil {
			return fail(err)
		}
		if err := app.Start(ctx); err != nil {
			return fail(fmt.Errorf("node %d: %w", i+2, err))
		}
	}
	return apps, nil
}

func closeAll(ctx context.Context, apps []*voltro.App) {
	for _, a := range apps {
		_ = a.Close(context.WithoutCancel(ctx))
	}
}

// waitSpread waits until the instances together hold every shard, each of
// them some.
func waitSpread(ctx context.Context, apps []*voltro.App, within time.Duration) error {
	if len(apps) == 1 {
		return waitOwned(ctx, apps[0], within)
	}
	deadline := time.Now().Add(within)
	for {
		sum, total, idle := 0, 0, 0
		for _, a := range apps {
			owned, t := a.Shards()
			sum, total = sum+owned, t
			if owned == 0 {
				idle++
			}
		}
		if sum == total && idle == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the %d instances hold %d of %d shards after %s, %d of them none", len(apps), sum, total, within, idle)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
