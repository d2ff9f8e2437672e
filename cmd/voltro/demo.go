package main

// voltro demo: the README's main job. Runs an instance with example entity
// types (and, as they land, workflows and schedules) on the embedded
// default: a SQLite file in the working directory.

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/dburl"
	"github.com/voltro/voltro/internal/demo"
)

func runDemo(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	fs := flags("demo", "demo [--db URL] [--tick 5s]", stderr)
	db := fs.String("db", "", "database URL (default DB_URL, else sqlite:voltro-demo.db in this directory)")
	tick := fs.String("tick", "", "period of the demo.tick schedule (default VOLTRO_DEMO_TICK, else 5s)")
	if err := parse(fs, args); err != nil {
		return err
	}
	every, err := config.DemoTick(*tick, env)
	if err != nil {
		return err
	}
	url := *db
	if url == "" {
		url = config.DatabaseURL(env)
	}
	if url == "" {
		url = "sqlite:voltro-demo.db"
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	app, err := voltro.New(ctx, voltro.WithDB(url), voltro.WithEnv(env), voltro.WithLogger(log))
	if err != nil {
		return err
	}
	if err := demo.Register(app, every); err != nil {
		_ = app.Close(ctx)
		return err
	}
	if err := app.Start(ctx); err != nil {
		return err
	}
	// The URL as a hint, never its password: a terminal's scrollback and a
	// screen share keep what is printed.
	demo.PrintWelcome(stdout, demo.CurrentInvocation().Command(), dburl.Redact(url), app.InspectAddr())
	<-ctx.Done()
	fmt.Fprintln(stderr, "shutting down: finishing running handlers and releasing shards…")
	return app.Close(context.WithoutCancel(ctx))
}
