package demo

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

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

// Register adds the demo's entity types, workflows and the demo.tick
// schedule (every tick) to app.
func Register(app *voltro.App, tick time.Duration) error {
	c := &counters{n: map[string]int{}}
	counter := voltro.NewEntity("demo.counter", func(ctx context.Context, id string, req AddRequest) (int, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.n[id] += req.By
		return c.n[id], nil
	})
	log := app.Logger()
	ticker := voltro.NewSchedule("demo.tick", "@every "+tick.String(), func(ctx context.Context, at time.Time) error {
		log.InfoContext(ctx, "demo.tick fired", "scheduledAt", at, "late", time.Since(at).Round(time.Millisecond))
		return nil
	})
	return app.Register(counter, Chain, Nap, Approval, FanOut, ticker)
}

// PrintWelcome says where to look and what to try; cli is the command that
// runs the voltro CLI from where the user is (Invocation.Command).
func PrintWelcome(w io.Writer, cli, dbURL, inspect string) {
	fmt.Fprintf(w, `voltro demo is running on %[1]s

Try, from another terminal in this directory:
  export DB_URL=%[1]s%[4]s
  %[3]s workflows start demo.chain --input '{"steps":5,"stepMillis":500}'
  %[3]s workflows get <id>                  # steps, attempts, the runner of each
  %[3]s workflows start demo.nap --input '{"seconds":30}'    # stop this demo meanwhile: it resumes
  %[3]s workflows start demo.approval --input '{"item":"invoice 7"}'
  %[3]s workflows signal <id> approve --payload '{"approved":true,"by":"you"}'
  %[3]s workflows start demo.fanout --input '{"children":3}'
  %[3]s workflows list
  %[3]s schedules list; %[3]s schedules runs demo.tick   # demo.tick fires once per tick across instances
Look inside:
  curl -s http://%[2]s/_voltro/inspect/cluster
  curl -s http://%[2]s/_voltro/health/ready
Run several instances against one PostgreSQL or MariaDB database (DB_URL=postgres://…, a
different VOLTRO_WORKFLOW_RUNNER_PORT each) and they form a cluster: kill one with SIGKILL
and its runs resume on the others. Stop with Ctrl-C: running work finishes, shards are released.
`, dbURL, inspect, cli, passwordHint(dbURL))
}

// passwordHint follows the export line when the URL printed had its
// password masked (dburl.Redact): the line works once it is put back.
func passwordHint(dbURL string) string {
	if strings.Contains(dbURL, ":xxxxx@") || strings.Contains(dbURL, "password=xxxxx") {
		return "   # the password is masked: put yours in place of xxxxx"
	}
	return ""
}
