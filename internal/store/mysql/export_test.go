// Test-only access to internals.
package mysql

import (
	"context"
	"database/sql"
	"net"
	"sync/atomic"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/voltro/voltro/internal/store"
)

// LockerConnID is the server connection id of a locker's reserved session.
func LockerConnID(l store.Locker) int64 { return l.(*locker).connID }

// PauseBeforeCommit makes every fenced write transaction of s call fn
// after its fence and its writes, before its COMMIT.
func PauseBeforeCommit(s *Store, fn func(ctx context.Context)) { s.beforeCommit = fn }

// BatchDB is the batch pool, nil when the store has none.
func BatchDB(s *Store) *sql.DB { return s.batch }

// Batched reports whether multi-table writes go as one round trip.
func Batched(s *Store) bool { return s.batched() }

// CountCommands replaces s's pools (same caps, same session settings) with
// ones whose connections count the commands the client sends: packets with
// sequence number 0, each one round trip. general counts the application
// pool's, batch the batch pool's. Commands a connection sends when it opens
// (its session settings) count too: warm the pools up before measuring.
func CountCommands(s *Store) (general, batch *atomic.Int64) {
	general, batch = new(atomic.Int64), new(atomic.Int64)
	reopen := func(old *sql.DB, cfg *gomysql.Config, n *atomic.Int64) *sql.DB {
		c := cfg.Clone()
		c.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			conn, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countingConn{conn, n}, nil
		}
		db, err := openDB(c, old.Stats().MaxOpenConnections)
		if err != nil {
			panic(err)
		}
		_ = old.Close()
		return db
	}
	s.db = reopen(s.db, s.cfg, general)
	if s.batch != nil {
		s.batch = reopen(s.batch, batchConfig(s.cfg), batch)
	}
	return general, batch
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

// Write sees one whole packet per call (go-sql-driver writes each packet
// with one Write): its 4-byte header ends with the sequence number.
func (c countingConn) Write(b []byte) (int, error) {
	if len(b) > 4 && b[3] == 0 {
		c.n.Add(1)
	}
	return c.Conn.Write(b)
}

// HeadsSQL is the heads statement of a dequeue of l reading limit heads
// (-1: all), and its arguments for queue l.Name at now.
func HeadsSQL(l store.QueueLimits, limit int, now time.Time) (string, []any) {
	args := []any{l.Name, now}
	if l.PartitionConcurrency > 0 {
		args = append(args, l.Name, l.PartitionConcurrency)
	}
	if limit >= 0 {
		args = append(args, limit)
	}
	return headsSQL(l, limit), args
}

// The statements that count a queue's slots in use and its recent dequeues.
const (
	CountSlots  = countSlots
	CountRecent = countRecent
)
