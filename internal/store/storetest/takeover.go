package storetest

// A takeover in the background, for the stores' forced-interleaving tests:
// a new owner's Acquire may wait for a lock that the test holds up on
// purpose, so it runs off the test's goroutine, and the test polls it with
// testwait.For beside whatever else it waits for.

import (
	"context"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// Takeover tries to acquire one shard through a locker, one Acquire at a
// time, each started by a Poll.
type Takeover struct {
	ctx     context.Context
	l       store.Locker
	shard   string
	ttl     time.Duration
	running bool
	res     chan takeoverTry
}

type takeoverTry struct {
	epoch int64
	ok    bool
	err   error
}

// NewTakeover returns a Takeover of shard through l, leases of ttl.
func NewTakeover(ctx context.Context, l store.Locker, shard string, ttl time.Duration) *Takeover {
	return &Takeover{ctx: ctx, l: l, shard: shard, ttl: ttl, res: make(chan takeoverTry, 1)}
}

// Poll starts an Acquire if none is under way and reports whether one took
// the shard, at which epoch. An Acquire that fails fails t.
func (tk *Takeover) Poll(t testing.TB) (int64, bool) {
	t.Helper()
	if !tk.running {
		tk.running = true
		go func() {
			e, ok, err := tk.l.Acquire(tk.ctx, tk.shard, tk.ttl)
			tk.res <- takeoverTry{e, ok, err}
		}()
	}
	select {
	case r := <-tk.res:
		tk.running = false
		if r.err != nil {
			t.Fatalf("the takeover of %s: %v", tk.shard, r.err)
		}
		return r.epoch, r.ok
	default:
		return 0, false
	}
}
