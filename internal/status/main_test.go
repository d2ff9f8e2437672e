package status_test

// The test binary doubles as an instance process: with VOLTRO_STATUS_ROLE
// set it runs one voltro app from its environment (so a test can SIGKILL
// it), hosting the status.work entity type and the status.wait workflow,
// and prints READY when it serves.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/voltro/voltro"
)

const roleEnv = "VOLTRO_STATUS_ROLE"

func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == "instance" {
		os.Exit(instanceMain())
	}
	os.Exit(m.Run())
}

// workEntity is the entity type every test instance hosts, so it owns shards.
func workEntity() *voltro.Entity[int, int] {
	return voltro.NewEntity("status.work", func(ctx context.Context, id string, n int) (int, error) { return n + 1, nil })
}

// waitWorkflow is the workflow every test instance hosts: every instance
// of an app registers the same code (README), since a run's messages go to
// whichever instance holds its shard, and an instance that does not host
// the workflow never reads them (a child without it held the run's shard
// in one CI run, leaving the run unstarted for the whole 30 s wait).
func waitWorkflow() *voltro.Workflow[int, int] {
	return voltro.NewWorkflow("status.wait", func(wc *voltro.WorkflowContext, n int) (int, error) {
		return voltro.AwaitSignal[int](wc, "go", time.Hour)
	})
}

func instanceMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	app, err := voltro.New(ctx, voltro.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err == nil {
		err = app.Register(workEntity(), waitWorkflow())
	}
	if err == nil {
		err = app.Start(ctx)
	}
	if err != nil {
		fmt.Println("BOOTFAIL", err)
		return 3
	}
	fmt.Println("READY", app.InspectAddr())
	<-ctx.Done()
	_ = app.Close(context.Background())
	return 0
}
