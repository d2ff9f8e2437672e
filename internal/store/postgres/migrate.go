// Embedded, versioned schema migrations, applied in filename order under a
// transaction-level advisory lock so processes booting together are safe.

package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
)

// migrations holds every *.sql file of the directory: the core tables use
// 0001-0099, other features add their own numbered files alongside.
//
//go:embed migrations/*.sql
var migrations embed.FS

// migrateLockKey serialises migrations of every voltro schema in the
// database: tables are per schema but advisory locks are per database, and
// one lock for all is never wrong.
var migrateLockKey = lockKey("voltro", "schema-migrations")

type migration struct {
	version string // file name without .sql
	sql     string
}

func loadMigrations() ([]migration, error) {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make([]migration, 0, len(names))
	for _, n := range names {
		b, err := migrations.ReadFile(n)
		if err != nil {
			return nil, err
		}
		v := strings.TrimSuffix(strings.TrimPrefix(n, "migrations/"), ".sql")
		out = append(out, migration{version: v, sql: string(b)})
	}
	return out, nil
}

// Migrate applies every embedded migration not yet recorded in
// voltro_schema_migrations, one transaction per file.
func (s *Store) Migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return fmt.Errorf("postgres migrate: %w", err)
	}
	err = s.inLockedTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS voltro_schema_migrations (
			version    text PRIMARY KEY,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`)
		return err
	})
	if err != nil {
		return wrapErr("migrate", err)
	}
	applied := map[string]bool{}
	rows, err := s.pool.Query(ctx, `SELECT version FROM voltro_schema_migrations`)
	if err != nil {
		return wrapErr("migrate", err)
	}
	vs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return wrapErr("migrate", err)
	}
	for _, v := range vs {
		applied[v] = true
	}
	for _, m := range ms {
		if applied[m.version] {
			continue
		}
		var ran bool
		err := s.inLockedTx(ctx, func(tx pgx.Tx) error {
			// Another process may have applied it while we waited for the lock.
			var done bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM voltro_schema_migrations WHERE version = $1)`, m.version).Scan(&done); err != nil {
				return err
			}
			if done {
				return nil
			}
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO voltro_schema_migrations (version, applied_at) VALUES ($1, now())`, m.version); err != nil {
				return err
			}
			ran = true
			return nil
		})
		if err != nil {
			return wrapErr("migrate "+m.version, err)
		}
		if ran {
			s.log.Info("applied migration", "version", m.version)
		}
	}
	return nil
}

// inLockedTx runs fn in a transaction holding the migration lock.
func (s *Store) inLockedTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLockKey); err != nil {
			return err
		}
		return fn(tx)
	})
}
