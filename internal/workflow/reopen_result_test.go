package workflow

// Result after a retry: the replay that failed the run hands its end to
// the waiters of this process only after its write; a retry can come in
// between, and a Result asked for after the retry must not be given that
// older end.

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/engine"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
	"github.com/voltro/voltro/internal/testwait"
)

// slowFailure is a store whose write of run id's failure returns only once
// release is closed (written says it is in the store): the replay that
// wrote it stays between its write and the hand-over of its end for as
// long as the test likes, as a descheduled goroutine would.
type slowFailure struct {
	store.Driver
	id      atomic.Pointer[string]
	written chan struct{}
	release chan struct{}
}

func (s *slowFailure) WriteRuns(ctx context.Context, ws []store.RunWrite) ([]error, error) {
	out, err := s.Driver.WriteRuns(ctx, ws)
	if id := s.id.Load(); err == nil && id != nil {
		for _, w := range ws {
			if w.Update != nil && w.Update.ID == *id && w.Update.Status == store.ExecFailed {
				s.id.Store(nil)
				close(s.written)
				<-s.release
			}
		}
	}
	return out, err
}

func TestResultAfterRetryIsNotTheEndBeforeIt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := &slowFailure{Driver: memory.New(), written: make(chan struct{}), release: make(chan struct{})}
	cfg, err := config.FromEnv(func(string) string { return "" }, "memory:")
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(ctx, engine.Options{Config: cfg, Store: d, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	w := New(e)
	var broken atomic.Bool
	broken.Store(true)
	if err := w.Register("charge", func(c *Context, _ []byte) ([]byte, error) {
		return c.Step("charge", func(context.Context) ([]byte, error) {
			if broken.Load() {
				return nil, errors.New("card declined")
			}
			return []byte(`"paid"`), nil
		}, RetryPolicy{MaxAttempts: 1})
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop(context.Background()); _ = w.Stop(context.Background()) })

	const id = "wf_charge"
	d.id.Store(new(string))
	*d.id.Load() = id
	if _, _, err := w.Start(ctx, "charge", nil, StartOptions{ID: id}); err != nil {
		t.Fatal(err)
	}
	<-d.written // failed in the store; its replay has not handed the end over
	broken.Store(false)
	if err := w.Retry(ctx, id); err != nil {
		t.Fatal(err)
	}
	got := make(chan store.Execution, 1)
	go func() {
		x, err := w.Result(ctx, id)
		if err != nil {
			t.Error(err)
		}
		got <- x
	}()
	testwait.For(t, 10*time.Second, "Result to wait", func() bool { return slices.Contains(w.Awaited(), id) })
	close(d.release)
	x := <-got
	if x.Status != store.ExecCompleted || string(x.Output) != `"paid"` {
		t.Fatalf("Result after the retry: %s %s %s, want the retried run's end (completed \"paid\")", x.Status, x.Output, x.Error)
	}
}
