package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
	"github.com/voltro/voltro/internal/testwait"
)

// failingComplete fails the first completion of one entity type, as a
// database that drops the connection mid-write would.
type failingComplete struct {
	store.Driver
	typ    string
	failed atomic.Bool
}

func (f *failingComplete) Complete(ctx context.Context, c store.Completion) error {
	m, err := f.Driver.GetMessage(ctx, c.MessageID)
	if err == nil && m.EntityType == f.typ && f.failed.CompareAndSwap(false, true) {
		return errors.New("connection reset while writing the outcome")
	}
	return f.Driver.Complete(ctx, c)
}

// A message whose outcome write failed is redelivered at once, not after
// its claim expires (and never while the runner stays busy: its claims are
// extended on every heartbeat while anything is in flight).
func TestFailedOutcomeWriteIsRedeliveredPromptly(t *testing.T) {
	d := &failingComplete{Driver: memory.New(), typ: "flaky"}
	e := startEngine(t, d, clusterConfig(t, "a"))
	release := make(chan struct{})
	if err := e.Register("slow", func(ctx context.Context, m store.Message) ([]byte, error) {
		select { // keeps something in flight, so claims are extended
		case <-release:
		case <-ctx.Done():
		}
		return nil, nil
	}, EntityOptions{}); err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	if err := e.Register("flaky", func(ctx context.Context, m store.Message) ([]byte, error) {
		runs.Add(1)
		return []byte("ok"), nil
	}, EntityOptions{}); err != nil {
		t.Fatal(err)
	}
	defer close(release)
	testwait.For(t, 5*time.Second, "shards", ownsAll(e))
	ctx := context.Background()
	if _, err := e.Send(ctx, Message{EntityType: "slow", EntityID: "s"}); err != nil {
		t.Fatal(err)
	}
	// Well inside the claim TTL (30 s): only a released claim is redelivered
	// this soon.
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r, err := e.Request(rctx, Message{EntityType: "flaky", EntityID: "f"})
	if err != nil {
		t.Fatalf("the request whose first outcome write failed did not complete: %v (handler ran %d times)", err, runs.Load())
	}
	if string(r.Payload) != "ok" || runs.Load() != 2 || !d.failed.Load() {
		t.Fatalf("reply %q after %d runs (failed write: %v)", r.Payload, runs.Load(), d.failed.Load())
	}
}
