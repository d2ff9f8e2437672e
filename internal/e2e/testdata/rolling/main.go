// Command rolling is one deploy of the workflow TestRollingDeployPatched
// changes: built without tags it is v1, with -tags v2 the patched v2. It
// hosts workflow "rolling.charge", prints READY once it serves and leaves
// the cluster gracefully on SIGTERM.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/voltro/voltro"
	_ "github.com/voltro/voltro/driver/postgres"
)

var flow = voltro.NewWorkflow("rolling.charge", func(wc *voltro.WorkflowContext, amount int) (string, error) {
	branch, total, err := charge(wc, amount)
	if err != nil {
		return "", err
	}
	if _, err := voltro.AwaitSignal[bool](wc, "ship", 0); err != nil {
		return "", err
	}
	by, err := voltro.Step(wc, "ship", func(context.Context) (string, error) { return version, nil })
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s branch, total %d, shipped by %s", branch, total, by), nil
})

func step(wc *voltro.WorkflowContext, name string, total int) (int, error) {
	return voltro.Step(wc, name, func(context.Context) (int, error) { return total, nil })
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	app, err := voltro.New(ctx, voltro.WithLogger(log))
	if err != nil {
		fmt.Println("BOOTFAIL", err)
		os.Exit(3)
	}
	if err := app.Register(flow); err != nil {
		fmt.Println("BOOTFAIL", err)
		os.Exit(3)
	}
	if err := app.Start(ctx); err != nil {
		fmt.Println("BOOTFAIL", err)
		os.Exit(3)
	}
	fmt.Println("READY", app.InspectAddr())
	<-ctx.Done()
	_ = app.Close(context.Background())
}
