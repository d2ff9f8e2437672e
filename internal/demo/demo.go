// Package demo is what `voltro demo` runs: example entity types, workflows
// and schedules that show the cluster at work.
package demo

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/voltro/voltro"
)

// AddRequest adds to a counter.
type AddRequest struct {
	By int `json:"by"`
}

// Counter is a demo entity: an in-memory counter per id, on its owner.
type counters struct {
	mu sync.Mutex
	n  map[string]int
}

// Register adds the demo's entity types (and workflows, schedules) to app.
func Register(app *voltro.App) error {
	c := &counters{n: map[string]int{}}
	counter := voltro.NewEntity("demo.counter", func(ctx context.Context, id string, req AddRequest) (int, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.n[id] += req.By
		return c.n[id], nil
	})
	return app.Register(counter)
}

// PrintWelcome says where to look and what to try.
func PrintWelcome(w io.Writer, dbURL, inspect string) {
	fmt.Fprintf(w, `voltro demo is running on %s
  inspect:   curl -s http://%s/_voltro/inspect/cluster
  readiness: curl -s http://%s/_voltro/health/ready
  messages:  DB_URL=%s voltro messages list
Run more instances against one PostgreSQL or MariaDB database (DB_URL=postgres://…,
VOLTRO_WORKFLOW_RUNNER_PORT different per instance) and they form a cluster.
Stop with Ctrl-C: running work finishes and shards are released.
`, dbURL, inspect, inspect, dbURL)
}
