// Embedded, versioned migrations: every migrations/*.sql file, applied in
// file name order and recorded in voltro_schema_migrations. Core uses
// 0001-0099; features add their own numbered files after that.

package sqlite

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one embedded file.
type migration struct {
	Version string // file name without .sql
	SQL     string
}

// migrations returns the embedded migrations in file name order.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, fmt.Errorf("sqlite: list migrations: %w", err)
	}
	sort.Strings(names)
	out := make([]migration, 0, len(names))
	for _, n := range names {
		b, err := migrationFiles.ReadFile(n)
		if err != nil {
			return nil, fmt.Errorf("sqlite: read migration %s: %w", n, err)
		}
		out = append(out, migration{Version: strings.TrimSuffix(path.Base(n), ".sql"), SQL: string(b)})
	}
	return out, nil
}

// Migrate applies every embedded migration not yet recorded. Each runs in its
// own BEGIN IMMEDIATE transaction, which holds the database write lock, so
// concurrent callers (other processes included) apply each file once.
func (s *Store) Migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	if _, err := s.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS voltro_schema_migrations (
		version    TEXT    PRIMARY KEY,
		applied_at INTEGER NOT NULL
	)`); err != nil {
		return s.wrap(err, "migrate")
	}
	for _, m := range ms {
		applied, err := s.applyMigration(ctx, m)
		if err != nil {
			return err
		}
		if applied {
			s.log.Info("sqlite store: migration applied", "version", m.Version, "path", s.path)
		}
	}
	return nil
}

// applyMigration runs m unless it is recorded already.
func (s *Store) applyMigration(ctx context.Context, m migration) (applied bool, err error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return false, s.wrap(err, "migrate "+m.Version)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM voltro_schema_migrations WHERE version = ?`, m.Version).Scan(&n); err != nil {
		return false, s.wrap(err, "migrate "+m.Version)
	}
	if n > 0 {
		return false, s.wrap(tx.Rollback(), "migrate "+m.Version)
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return false, s.wrap(err, "migrate "+m.Version)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO voltro_schema_migrations (version, applied_at) VALUES (?, ?)`, m.Version, s.now()); err != nil {
		return false, s.wrap(err, "migrate "+m.Version)
	}
	if err := tx.Commit(); err != nil {
		return false, s.wrap(err, "migrate "+m.Version)
	}
	return true, nil
}

// AppliedMigrations lists the recorded migration versions in order.
func (s *Store) AppliedMigrations(ctx context.Context) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT version FROM voltro_schema_migrations ORDER BY version`)
	if err != nil {
		return nil, s.wrap(err, "list migrations")
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, s.wrap(err, "list migrations")
		}
		out = append(out, v)
	}
	return out, s.wrap(rows.Err(), "list migrations")
}
