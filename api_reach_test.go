package voltro_test

// Public functions no other test reached: a tracer provider given to New
// sees the runs' spans, and an Error unwraps to what it wrapped.

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/voltro/voltro"
)

func TestTracerProviderSeesRuns(t *testing.T) {
	t.Setenv("VOLTRO_REGISTRY_DIR", t.TempDir())
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	ctx := context.Background()
	app, err := voltro.New(ctx, voltro.WithDB("memory:"), voltro.WithTracerProvider(tp),
		voltro.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		voltro.WithEnv(func(k string) string { return map[string]string{"VOLTRO_INSPECT_ADDR": "127.0.0.1:0"}[k] }))
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close(ctx)
	traced := voltro.NewWorkflow("api.traced", func(wc *voltro.WorkflowContext, n int) (int, error) { return n + 1, nil })
	if err := app.Register(traced); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if out, err := traced.Run(ctx, app, 1); err != nil || out != 2 {
		t.Fatalf("run: %d, %v", out, err)
	}
	if len(exp.GetSpans()) == 0 {
		t.Fatal("the tracer provider given to New recorded no span of the run")
	}
}

func TestErrorUnwraps(t *testing.T) {
	cause := errors.New("disk full")
	err := voltro.NewError(voltro.CodeUnavailable, "saving: %w", cause)
	var e *voltro.Error
	if !errors.As(err, &e) || e.Unwrap() != cause || !errors.Is(err, cause) {
		t.Fatalf("%v does not unwrap to its cause", err)
	}
}
