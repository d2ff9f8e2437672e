// Benchmark support (store/bench.go): the commit-rate probe, the server's
// statement counters, sibling databases and planner statistics, on the
// application pool. The probe's inserts are single attempts (a retry would
// count as a commit the database never made); its table and cleanup go
// through the store's retry.

package mysql

import (
	"context"
	"strings"
	"time"

	"github.com/voltro/voltro/internal/store"
)

var (
	_ store.CommitProber     = (*Store)(nil)
	_ store.StatementCounter = (*Store)(nil)
	_ store.DatabaseCreator  = (*Store)(nil)
	_ store.HistoryAnalyzer  = (*Store)(nil)
)

// quoteIdent quotes a table or database name.
func quoteIdent(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

func (s *Store) CommitRate(ctx context.Context, conns int, d time.Duration) (float64, error) {
	t := quoteIdent(store.BenchCommitTable)
	// The table comes from migration 0700; emptying it first also says,
	// on a database never migrated, what is missing.
	if _, err := s.exec(ctx, "DELETE FROM "+t); err != nil {
		return 0, wrapErr(store.BenchCommitMissing, err)
	}
	defer func() { _, _ = s.exec(context.WithoutCancel(ctx), "DELETE FROM "+t) }()
	// The probe measures the database, not the app's pool: its own
	// connections, so a pool capped below conns (DB_MAX_CONNS) neither
	// starves it nor is starved by it.
	db, err := openDB(s.cfg, conns)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	rate, err := store.MeasureCommits(ctx, conns, d, func(ctx context.Context) (func(context.Context, int) error, func(), error) {
		conn, err := db.Conn(ctx)
		if err != nil {
			return nil, nil, err
		}
		return func(ctx context.Context, i int) error {
			_, err := conn.ExecContext(ctx, "INSERT INTO "+t+" (v) VALUES (?)", i)
			return err
		}, func() { _ = conn.Close() }, nil
	})
	return rate, wrapErr("commit rate", err)
}

func (s *Store) StatementCounter() store.CounterInfo {
	return store.CounterInfo{Note: "server-wide statement counters (select, insert, update, delete, begin, commit, rollback): anything else on the server counts too"}
}

func (s *Store) CountStatements(ctx context.Context) (float64, error) {
	var v float64
	err := s.db.QueryRowContext(ctx, "SELECT SUM(VARIABLE_VALUE) FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME IN"+
		" ('COM_SELECT', 'COM_INSERT', 'COM_UPDATE', 'COM_DELETE', 'COM_BEGIN', 'COM_COMMIT', 'COM_ROLLBACK')").Scan(&v)
	return v, wrapErr("statement counters", err)
}

func (s *Store) CreateDatabase(ctx context.Context, name string) error {
	_, err := s.exec(ctx, "CREATE DATABASE IF NOT EXISTS "+quoteIdent(name))
	return wrapErr("create database "+name, err)
}

func (s *Store) AnalyzeHistory(ctx context.Context) error {
	for _, t := range store.HistoryTables {
		// ANALYZE TABLE answers with a result set: read it as rows.
		rows, err := s.db.QueryContext(ctx, "ANALYZE TABLE "+quoteIdent(t))
		if err != nil {
			return wrapErr("analyze "+t, err)
		}
		for rows.Next() {
		}
		err = rows.Err()
		_ = rows.Close()
		if err != nil {
			return wrapErr("analyze "+t, err)
		}
	}
	return nil
}
