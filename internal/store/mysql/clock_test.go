// The test clock on MariaDB/MySQL: every connection reads it, and a read of
// the server's own clock fails instead of passing unnoticed.

package mysql_test

import (
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/testdb"
)

func TestClock(t *testing.T) {
	at := time.Date(2031, 3, 4, 5, 6, 7, 891000000, time.UTC)
	s, _ := fresh(t, "myclock", clocked(func() time.Time { return at }))
	ctx := ctxT(t)
	now, err := s.Now(ctx)
	if err != nil || !now.Equal(at) {
		t.Fatalf("Now = %v, %v; want the test clock's %v", now, err, at)
	}
	// Other reads of the server clock, and an insert that leaves a clock
	// DEFAULT to the server, fail and say why.
	for q, want := range map[string]string{
		`SELECT SYSDATE()`:        "voltro_test_clock_forbids_sysdate",
		`SELECT CURRENT_DATE`:     "voltro_test_clock_forbids_current_date",
		`SELECT UNIX_TIMESTAMP()`: "voltro_test_clock_forbids_unix_timestamp",
		`SELECT x.NOW()`:          "voltro_test_clock_forbids_now",
		`INSERT INTO _voltro_cdc_offsets (replica_id, server_id, gtid) VALUES ('r', 1, '')`: "updated_at",
	} {
		_, err := s.DB().ExecContext(ctx, q)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s under a test clock: want an error naming %s, got %v", q, want, err)
		}
	}
	// Without a clock nothing is rewritten: the server's clock answers.
	plain := open(t, testdb.MariaDB(t, "myclock_plain"), quiet)
	var server time.Time
	if err := plain.DB().QueryRowContext(ctx, `SELECT SYSDATE(6)`).Scan(&server); err != nil || time.Since(server).Abs() > time.Hour {
		t.Fatalf("server clock without a test clock: %v %v", server, err)
	}
}
