// Push wake-ups over LISTEN/NOTIFY: writes notify "<namespace>_wake" in the
// same statement, and ListenWakes turns notifications into store.Wake calls
// on a dedicated connection that reconnects with backoff.

package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voltro/voltro/internal/store"
)

// Notification payloads: "m <id> <shard>" for a deliverable message,
// "r <id>" for a stored final reply.

func parseWake(payload string) (store.Wake, bool) {
	kind, rest, _ := strings.Cut(payload, " ")
	idStr, shard, _ := strings.Cut(rest, " ")
	id, err := strconv.ParseInt(idStr, 10, 64)
	if err != nil {
		return store.Wake{}, false
	}
	switch kind {
	case "m":
		return store.Wake{Kind: store.WakeMessage, Shard: shard, ID: id}, true
	case "r":
		return store.Wake{Kind: store.WakeReply, ID: id}, true
	}
	return store.Wake{}, false
}

const (
	listenIdle       = 30 * time.Second // probe the connection after this long without a notification
	listenMaxBackoff = 5 * time.Second
)

// ListenWakes calls fn for every wake-up until ctx ends or the store is
// closed (it then returns nil).
// After a reconnect it calls fn(store.Wake{}): notifications sent while it
// was disconnected are lost, so the caller re-reads.
func (s *Store) ListenWakes(ctx context.Context, fn func(store.Wake)) error {
	backoff := 100 * time.Millisecond
	connected := false
	for ctx.Err() == nil && !s.isClosed() {
		conn, err := s.connect(ctx, "voltro-listen")
		if err == nil {
			_, err = conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel}.Sanitize())
			if err == nil {
				if connected {
					s.log.Info("wake listener reconnected")
					fn(store.Wake{})
				}
				connected = true
				backoff = 100 * time.Millisecond
				err = s.listen(ctx, conn, fn)
			}
			closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = conn.Close(closeCtx)
			cancel()
		}
		if ctx.Err() != nil || s.isClosed() {
			break
		}
		s.log.Warn("wake listener lost its connection, reconnecting", "err", err, "backoff", backoff)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, listenMaxBackoff)
	}
	return nil
}

// listen delivers notifications from conn until it fails or ctx ends.
func (s *Store) listen(ctx context.Context, conn *pgx.Conn, fn func(store.Wake)) error {
	for {
		wctx, cancel := context.WithTimeout(ctx, listenIdle)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed() {
				// Idle: prove the connection still answers.
				pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				err = conn.Ping(pctx)
				cancel()
				if err == nil {
					continue
				}
			}
			return wrapErr("listen", err)
		}
		if w, ok := parseWake(n.Payload); ok {
			fn(w)
		}
	}
}
