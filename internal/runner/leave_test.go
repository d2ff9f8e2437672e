package runner

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
	"github.com/voltro/voltro/internal/testwait"
)

// drainBarrier's drains wait until every shard's drain has begun: drains
// made one after another would never get past the first.
type drainBarrier struct {
	nopCallbacks
	mu      sync.Mutex
	begun   int
	all     int
	release chan struct{}
}

func (b *drainBarrier) DrainShard(ctx context.Context, _ string, _ int64) {
	b.mu.Lock()
	b.begun++
	if b.begun == b.all {
		close(b.release)
	}
	b.mu.Unlock()
	select {
	case <-b.release:
	case <-ctx.Done():
	}
}

// Leaving drains every shard at once: a database that stops answering
// while handlers write holds each drain for the longest of its handlers'
// bounded writes, and one shard after another that was many times a grace
// period.
func TestLeaveDrainsEveryShardAtOnce(t *testing.T) {
	d := memory.New()
	cb := &drainBarrier{all: testShards, release: make(chan struct{})}
	r := New(d, cb, Options{
		Address: "a:1", ReplicaID: "a", Groups: []string{"default"}, ShardCount: testShards,
		Mode: store.LockRow, Heartbeat: 200 * time.Millisecond,
		EntityTypes: func() []string { return []string{"test.entity"} },
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.Run(ctx)
	}()
	testwait.For(t, 10*time.Second, "every shard held", func() bool { return len(r.Held()) == testShards })
	cancel()
	<-done
	// Bounded only so that a regression fails instead of hanging.
	lctx, lcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer lcancel()
	r.Leave(lctx)
	if lctx.Err() != nil {
		cb.mu.Lock()
		defer cb.mu.Unlock()
		t.Fatalf("the drains ran one after another: %d of %d had begun when the bound ran out", cb.begun, testShards)
	}
}
