package voltro_test

import (
	"context"
	"errors"
	"testing"

	"github.com/voltro/voltro"
)

// TestWithMaxParallelBelowOneIsRefused: a bound under one would let no Go
// step run; registering it fails with invalid_argument.
func TestWithMaxParallelBelowOneIsRefused(t *testing.T) {
	ctx := context.Background()
	app, err := voltro.New(ctx, voltro.WithConfig(voltro.Config{DatabaseURL: "memory:", ReplicaID: "mp-0"}))
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close(ctx)
	wf := voltro.NewWorkflow("mp.zero", func(*voltro.WorkflowContext, int) (int, error) { return 0, nil }, voltro.WithMaxParallel(0))
	if err := app.Register(wf); !errors.Is(err, voltro.ErrInvalidArgument) {
		t.Fatalf("WithMaxParallel(0): %v, want invalid_argument", err)
	}
}
