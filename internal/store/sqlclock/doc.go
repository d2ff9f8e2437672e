// Package sqlclock puts a PostgreSQL or MariaDB/MySQL store on a clock the
// caller controls, for tests that move time instead of sleeping it out.
//
// In production the SQL stores read the database server's clock in SQL
// (now(), UTC_TIMESTAMP(6)): it is the single time source of a cluster, and
// nothing here runs. With a test clock set (postgres.Options.Clock,
// mysql.Options.Clock) the store dials its connections through Dialer, which
// rewrites the SQL text of every statement on the wire, whatever issued it
// (the pool, database/sql, a locker's own connection, the migrator): each
// read of the server's clock becomes a literal of the test clock's time,
// taken when the statement is sent. A read the rewriter does not turn into
// the test clock cannot pass unnoticed: it is renamed to a function that
// does not exist (voltro_test_clock_forbids_…), so the statement fails, and
// a column DEFAULT that stamps the server's time is turned, when its table
// is created, into one that fails the insert that relies on it.
package sqlclock
