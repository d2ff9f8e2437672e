// The store's clock. SQLite has no server whose clock could arbitrate, and
// every process that can open the file safely runs on the same host, so the
// store clock is that host's clock, read in Go (Options.Clock replaces it,
// for tests that move time). Each operation reads it once (s.now) and
// passes it to its statements as a parameter: every comparison of stored
// times (leases, claim expiry, deliver_at, heartbeat age) is made in SQL
// against that one value, never against SQLite's own 'now'. Times are
// stored as INTEGER unix microseconds; 0 means unset.

package sqlite

import (
	"context"
	"time"
)

// now is the single time source of the store, in unix microseconds.
func (s *Store) now() int64 { return s.clock().UnixMicro() }

// Now is the store's clock.
func (s *Store) Now(context.Context) (time.Time, error) {
	return fromMicros(s.now()), nil
}

// micros stores t; the zero time is stored as 0.
func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// fromMicros is the inverse of micros.
func fromMicros(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us)
}

// durMicros turns a duration into microseconds, the unit of stored times.
func durMicros(d time.Duration) int64 { return d.Microseconds() }

// ageOf is now - t as a duration.
func ageOf(nowUS, tUS int64) time.Duration {
	return time.Duration(nowUS-tUS) * time.Microsecond
}
