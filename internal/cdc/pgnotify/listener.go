// The listening connection: one per instance, outside the pool, reconnecting
// with backoff; after a reconnect it reports a gap so subscribers resync.

package pgnotify

import (
	"context"
	"log/slog"
	"net"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voltro/voltro/internal/store/postgres"
)

// Listener holds the LISTEN connection of one instance.
type Listener struct {
	URL       string
	ReplicaID string
	Logger    *slog.Logger
	// OnNotify receives every payload, in commit order, on the listener's
	// goroutine.
	OnNotify func(ctx context.Context, payload string)
	// OnGap is called after a reconnect: notifications sent while the
	// connection was down are lost.
	OnGap func(reason string)
}

// Run listens until ctx ends. ready is closed once the first LISTEN is in
// place, so a caller can subscribe without missing changes made after; if
// that first connection fails, Run returns its error.
func (l *Listener) Run(ctx context.Context, ready chan<- struct{}) error {
	backoff := 50 * time.Millisecond
	first := true
	for {
		conn, err := l.connect(ctx)
		if err != nil && first {
			return err // a bad URL or credentials: fail the start, do not spin
		}
		if err == nil {
			if first {
				close(ready)
			} else {
				l.Logger.Info("change listener reconnected; asking subscribers to resync", "channel", Channel)
				l.OnGap("change listener reconnected after a gap")
			}
			first = false
			backoff = 50 * time.Millisecond
			err = l.loop(ctx, conn)
			_ = conn.Close(context.WithoutCancel(ctx))
		}
		if ctx.Err() != nil {
			return nil
		}
		l.Logger.Warn("change listener connection lost; reconnecting", "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

func (l *Listener) connect(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(l.URL)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = AppName(l.ReplicaID)
	dialer := &net.Dialer{KeepAlive: 15 * time.Second, Timeout: 5 * time.Second}
	cfg.DialFunc = dialer.DialContext
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := postgres.ListenChanges(cctx, conn); err != nil {
		_ = conn.Close(ctx)
		return nil, err
	}
	return conn, nil
}

func (l *Listener) loop(ctx context.Context, conn *pgx.Conn) error {
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		l.OnNotify(ctx, n.Payload)
	}
}

// AppName is the application_name of a replica's listening connection, so
// operators (and tests) can find its backend in pg_stat_activity.
func AppName(replicaID string) string { return "voltro-cdc-listen:" + replicaID }
