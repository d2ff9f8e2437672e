package runner

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
	"github.com/voltro/voltro/internal/testwait"
)

// stuckListing makes the runner's listings of the cluster wait, once stuck
// is set, until release is closed, whatever their context: a node that
// stopped answering, and a driver call that does not see its deadline
// (a MySQL read on a connection whose peer went silent).
type stuckListing struct {
	store.Driver
	stuck   *atomic.Bool
	waiting *atomic.Int32
	release chan struct{}
}

func (s stuckListing) ListRunners(ctx context.Context) ([]store.Runner, error) {
	if s.stuck.Load() {
		s.waiting.Add(1)
		defer s.waiting.Add(-1)
		<-s.release
		return nil, context.DeadlineExceeded
	}
	return s.Driver.ListRunners(ctx)
}

// Every start, send and wake-up asks Owner where a shard is held; a pass
// waiting on the database must not hold them up with it.
func TestOwnerAnswersWhileAPassWaitsOnTheDatabase(t *testing.T) {
	var stuck atomic.Bool
	var waiting atomic.Int32
	release := make(chan struct{})
	r := New(stuckListing{memory.New(), &stuck, &waiting, release}, nopCallbacks{}, Options{
		Address: "a:1", ReplicaID: "a", Groups: []string{"default"}, ShardCount: testShards,
		Mode: store.LockRow, Heartbeat: time.Second,
		EntityTypes: func() []string { return []string{"test.entity"} },
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { close(release); cancel(); <-done })
	go func() {
		defer close(done)
		_ = r.Run(ctx)
	}()
	testwait.For(t, 10*time.Second, "every shard held", func() bool { return len(r.Held()) == testShards })
	var shard string
	for s := range r.Held() {
		shard = s
		break
	}
	stuck.Store(true)
	testwait.For(t, 10*time.Second, "a pass waiting in its listing", func() bool { return waiting.Load() > 0 })
	answered := make(chan string, 1)
	go func() { answered <- r.Owner(shard) }()
	// Bounded only so that a regression fails instead of hanging.
	select {
	case got := <-answered:
		if got != "a:1" {
			t.Fatalf("Owner(%s) = %q while this runner holds it", shard, got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Owner waited for the pass stuck in the database")
	}
	if waiting.Load() == 0 {
		t.Fatal("the pass was no longer waiting when Owner answered: the test proved nothing")
	}
}
