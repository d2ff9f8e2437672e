// The change feed of a standalone dashboard, opened on the first stream
// and closed a linger after the last one leaves: with no page open it
// holds no LISTEN connection and no binlog dump.

package dashboard

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/voltro/voltro/internal/cdc"
)

// feedLinger is how long the feed stays open after the last stream left
// (a page reloading or moving to another panel keeps it).
const feedLinger = 30 * time.Second

type lazyFeed struct {
	open    func(context.Context) (*cdc.Feed, error)
	base    context.Context
	log     *slog.Logger
	mu      sync.Mutex
	f       *cdc.Feed
	users   int
	opening chan struct{}
	timer   *time.Timer
	closed  bool
}

// acquire counts a stream and opens the feed if it is not open, waiting
// for it at most subscribeWithin (a stream then polls; a late feed serves
// the streams that come after).
func (l *lazyFeed) acquire() {
	l.mu.Lock()
	l.users++
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	if l.f != nil || l.closed {
		l.mu.Unlock()
		return
	}
	if l.opening == nil {
		ch := make(chan struct{})
		l.opening = ch
		go l.opened(ch)
	}
	ch := l.opening
	l.mu.Unlock()
	t := time.NewTimer(subscribeWithin)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	}
}

func (l *lazyFeed) opened(ch chan struct{}) {
	f, err := l.open(l.base)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.opening = nil
	close(ch)
	switch {
	case err != nil:
		l.log.Warn("no change feed: the dashboard polls while a page is open", "err", err)
	case l.closed || l.users == 0:
		_ = f.Close()
	default:
		l.f = f
	}
}

// release uncounts a stream; after the last, the feed closes feedLinger
// later unless another stream came.
func (l *lazyFeed) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.users--
	if l.users > 0 || l.f == nil || l.closed {
		return
	}
	l.timer = time.AfterFunc(feedLinger, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.users == 0 && l.f != nil {
			_ = l.f.Close()
			l.f = nil
		}
	})
}

func (l *lazyFeed) get() *cdc.Feed {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f
}

func (l *lazyFeed) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.timer != nil {
		l.timer.Stop()
	}
	if l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
}

// feed is the change feed the streams subscribe to now: Config.Feed, or
// the one OpenFeed opened; nil for none.
func (d *Dashboard) feed() *cdc.Feed {
	if d.lazy != nil {
		return d.lazy.get()
	}
	return d.c.Feed
}
