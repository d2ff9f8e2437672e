// The test clock on PostgreSQL: every path to the server reads it, and a
// read of the server's own clock fails instead of passing unnoticed.

package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/testdb"
)

func TestClock(t *testing.T) {
	at := time.Date(2031, 3, 4, 5, 6, 7, 891000000, time.UTC)
	s := openClock(t, testdb.Postgres(t, "pgclock"), func() time.Time { return at })
	ctx := ctxT(t)
	now, err := s.Now(ctx)
	if err != nil || !now.Equal(at) {
		t.Fatalf("Now = %v, %v; want the test clock's %v", now, err, at)
	}
	// database/sql sees it as the pgx pool (Now) does; lockers: storetest's StoreClock.
	var viaDB time.Time
	if err := s.DB().QueryRowContext(ctx, `SELECT now()`).Scan(&viaDB); err != nil || !viaDB.Equal(at) {
		t.Fatalf("DB now() = %v, %v", viaDB, err)
	}
	// Other reads of the server clock, and inserts that leave a clock
	// DEFAULT to the server, fail and say why.
	for _, q := range []string{
		`SELECT clock_timestamp()`, `SELECT current_timestamp`, `SELECT statement_timestamp()`,
		`SELECT pg_catalog.now()`, `INSERT INTO voltro_replies (request_id) VALUES (1)`,
	} {
		_, err := s.DB().ExecContext(context.WithoutCancel(ctx), q)
		if err == nil || !strings.Contains(err.Error(), "test_clock_forbids_") {
			t.Errorf("%s under a test clock: want a test_clock_forbids_ error, got %v", q, err)
		}
	}
	// Without a clock nothing is rewritten: the server's clock answers.
	plain := open(t, testdb.Postgres(t, "pgclock_plain"))
	var server time.Time
	if err := plain.DB().QueryRowContext(ctx, `SELECT clock_timestamp()`).Scan(&server); err != nil || time.Since(server).Abs() > time.Hour {
		t.Fatalf("server clock without a test clock: %v %v", server, err)
	}
}
