package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/voltro/voltro"
	_ "github.com/voltro/voltro/driver/postgres" // the one database this service uses
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	app, err := voltro.New(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	counter := voltro.NewEntity("counter", func(ctx context.Context, id string, by int) (int, error) { return by, nil })
	if err := app.Register(counter); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := app.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
