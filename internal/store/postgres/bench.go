// Benchmark support (store/bench.go): the commit-rate probe, the server's
// transaction counter, sibling databases and planner statistics, on the
// application pool (database/sql, as the application's own writes); the
// commit probe on connections of its own.

package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voltro/voltro/internal/store"
)

var (
	_ store.CommitProber     = (*Store)(nil)
	_ store.StatementCounter = (*Store)(nil)
	_ store.DatabaseCreator  = (*Store)(nil)
	_ store.HistoryAnalyzer  = (*Store)(nil)
)

func (s *Store) CommitRate(ctx context.Context, conns int, d time.Duration) (float64, error) {
	// The table comes from migration 0700; emptying it first also says,
	// on a database never migrated, what is missing.
	if _, err := s.db.ExecContext(ctx, `DELETE FROM `+store.BenchCommitTable); err != nil {
		return 0, wrapErr(store.BenchCommitMissing, err)
	}
	defer func() { _, _ = s.db.ExecContext(context.WithoutCancel(ctx), `DELETE FROM `+store.BenchCommitTable) }()
	// The probe measures the database, not the app's pool: a connection of
	// its own per worker, so a pool capped below conns (DB_MAX_CONNS)
	// neither starves it nor is starved by it.
	rate, err := store.MeasureCommits(ctx, conns, d, func(ctx context.Context) (func(context.Context, int) error, func(), error) {
		conn, err := pgx.ConnectConfig(ctx, s.connCfg.Copy())
		if err != nil {
			return nil, nil, err
		}
		return func(ctx context.Context, i int) error {
			_, err := conn.Exec(ctx, `INSERT INTO `+store.BenchCommitTable+` (v) VALUES ($1)`, i)
			return err
		}, func() { _ = conn.Close(context.Background()) }, nil
	})
	return rate, wrapErr("commit rate", err)
}

// StatementCounter: backends that went idle flush their pending statistics
// within 10 s (PostgreSQL's idle stats interval), an active one at most
// once a second.
func (s *Store) StatementCounter() store.CounterInfo {
	return store.CounterInfo{
		Note:   "pg_stat_database transactions of this database; each runner statement is its own transaction",
		Settle: 11 * time.Second, Tail: 1500 * time.Millisecond,
	}
}

func (s *Store) CountStatements(ctx context.Context) (float64, error) {
	var v float64
	err := s.db.QueryRowContext(ctx, `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()`).Scan(&v)
	return v, wrapErr("statement counter", err)
}

func (s *Store) CreateDatabase(ctx context.Context, name string) error {
	var exists bool
	if err := s.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return wrapErr("create database "+name, err)
	}
	if exists {
		return nil
	}
	_, err := s.db.ExecContext(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize())
	return wrapErr("create database "+name, err)
}

func (s *Store) AnalyzeHistory(ctx context.Context) error {
	for _, t := range store.HistoryTables {
		if _, err := s.db.ExecContext(ctx, `ANALYZE `+pgx.Identifier{t}.Sanitize()); err != nil {
			return wrapErr("analyze "+t, err)
		}
	}
	return nil
}
