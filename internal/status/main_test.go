package status_test

// The test binary doubles as an instance process: with VOLTRO_STATUS_ROLE
// set it runs one voltro app from its environment (so a test can SIGKILL
// it), hosting the status.work entity type, and prints READY when it serves.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"testing"

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

func instanceMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	app, err := voltro.New(ctx, voltro.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err == nil {
		err = app.Register(workEntity())
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
