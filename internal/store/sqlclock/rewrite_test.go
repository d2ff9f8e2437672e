// Rewrite's answers for the clock reads of each dialect.

package sqlclock

import (
	"testing"
	"time"
)

func TestRewrite(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 123456789, time.UTC)
	for _, c := range []struct {
		d        Dialect
		in, want string
	}{
		{Postgres, `UPDATE t SET at = now() + $1 WHERE x < NOW( )`,
			`UPDATE t SET at = '2030-01-02 03:04:05.123456+00'::timestamptz + $1 WHERE x < '2030-01-02 03:04:05.123456+00'::timestamptz`},
		{Postgres, `SELECT 'now()', now()`, `SELECT 'now()', '2030-01-02 03:04:05.123456+00'::timestamptz`},
		{Postgres, `SELECT clock_timestamp(), pg_catalog.now(), CURRENT_TIMESTAMP`,
			`SELECT voltro_test_clock_forbids_clock_timestamp(), voltro_test_clock_forbids_pg_catalog_now(), voltro_test_clock_forbids_current_timestamp()`},
		{Postgres, `CREATE TABLE t (at timestamptz NOT NULL DEFAULT now(), n int)`,
			`CREATE TABLE t (at timestamptz NOT NULL DEFAULT CAST(current_setting('voltro.test_clock_forbids_server_clock_default') AS timestamptz), n int)`},
		{Postgres, `SELECT snow(), a.now_x, last_now()`, `SELECT snow(), a.now_x, last_now()`},
		{Postgres, "-- the runner's row\nCREATE TABLE r (at timestamptz DEFAULT now()) /* it's */; SELECT now()",
			"-- the runner's row\nCREATE TABLE r (at timestamptz DEFAULT CAST(current_setting('voltro.test_clock_forbids_server_clock_default') AS timestamptz)) /* it's */; SELECT '2030-01-02 03:04:05.123456+00'::timestamptz"},
		{MySQL, `UPDATE t SET a = UTC_TIMESTAMP(6), b = utc_timestamp(3), c = NOW(), d = CURRENT_TIMESTAMP(6)`,
			`UPDATE t SET a = TIMESTAMP'2030-01-02 03:04:05.123456', b = TIMESTAMP'2030-01-02 03:04:05.123', c = TIMESTAMP'2030-01-02 03:04:05', d = TIMESTAMP'2030-01-02 03:04:05.123456'`},
		{MySQL, `SELECT 'UTC_TIMESTAMP(6)', "it\'s NOW()", SYSDATE(), UNIX_TIMESTAMP(), UNIX_TIMESTAMP(x), CURRENT_DATE`,
			`SELECT 'UTC_TIMESTAMP(6)', "it\'s NOW()", voltro_test_clock_forbids_sysdate(), voltro_test_clock_forbids_unix_timestamp(), UNIX_TIMESTAMP(x), voltro_test_clock_forbids_current_date()`},
		{MySQL, "# it's\nSELECT NOW(6) -- isn't\n", "# it's\nSELECT TIMESTAMP'2030-01-02 03:04:05.123456' -- isn't\n"},
		{MySQL, "CREATE TABLE t (u TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), n int)",
			"CREATE TABLE t (u TIMESTAMP(6) NOT NULL, n int)"},
	} {
		if got := Rewrite(c.d, c.in, at); got != c.want {
			t.Errorf("Rewrite(%d, %q)\n got %q\nwant %q", c.d, c.in, got, c.want)
		}
	}
}
