// Versioned, embedded migrations. Every migrations/*.sql file is applied once,
// in file name order, and recorded in voltro_schema_migrations. Core tables
// use 0001-0099; features add their own files (0100_*.sql, 0200_*.sql, …) to
// the same directory and are picked up without code changes.
//
// Exclusion: the migrator takes GET_LOCK on a dedicated connection, which
// serializes processes booting at once against one server. GET_LOCK is
// node-local on Galera, so there it additionally holds a lease row in
// voltro_migration_lock, taken with a conditional upsert that Galera
// certifies cluster-wide. DDL on Galera runs in total order isolation (TOI):
// each statement is applied on every node at the same point of the
// replication stream and may abort conflicting local transactions (they see
// 1213 and are retried). DDL is not transactional in MySQL/MariaDB, so every
// migration statement must be idempotent (CREATE TABLE IF NOT EXISTS, …): a
// file interrupted half way is simply run again.

package mysql

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/voltro/voltro/internal/errs"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

type migration struct {
	version string // file name without .sql, e.g. 0001_core
	sql     string
}

// migrations lists the embedded files in name order.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, fmt.Errorf("mysql store: list migrations: %w", err)
	}
	sort.Strings(names)
	out := make([]migration, 0, len(names))
	for _, n := range names {
		b, err := migrationFS.ReadFile(n)
		if err != nil {
			return nil, fmt.Errorf("mysql store: read %s: %w", n, err)
		}
		v := strings.TrimSuffix(strings.TrimPrefix(n, "migrations/"), ".sql")
		out = append(out, migration{version: v, sql: string(b)})
	}
	return out, nil
}

const migrationLeaseTTL = 2 * time.Minute

// Migrate applies every migration not yet recorded, under the migration lock.
func (s *Store) Migrate(ctx context.Context) error {
	all, err := migrations()
	if err != nil {
		return err
	}
	// A file is sent as one multi-statement query, on a connection of the
	// migrator's own that runs only the embedded files and fixed statements
	// and is closed when Migrate returns; the application pool keeps multi
	// statements off (see sessionConfig).
	cfg := batchConfig(s.cfg)
	cfg.Params["sql_mode"] = sessionSQLMode
	db, err := openDB(cfg, 1)
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return wrapErr("migrate: connect", err)
	}
	defer conn.Close()

	token, unlock, err := s.migrationLock(ctx, conn)
	if err != nil {
		return err
	}
	defer unlock()

	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS voltro_schema_migrations (
		version    VARCHAR(191) NOT NULL PRIMARY KEY,
		applied_at DATETIME(6)  NOT NULL
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`); err != nil {
		return wrapErr("migrate: create voltro_schema_migrations", err)
	}
	applied := map[string]bool{}
	rows, err := conn.QueryContext(ctx, "SELECT version FROM voltro_schema_migrations")
	if err != nil {
		return wrapErr("migrate: read applied versions", err)
	}
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return wrapErr("migrate: read applied versions", err)
		}
		applied[v] = true
	}
	if err := rows.Err(); err != nil {
		return wrapErr("migrate: read applied versions", err)
	}
	rows.Close()

	for _, m := range all {
		if applied[m.version] {
			continue
		}
		start := time.Now()
		err := retry(ctx, &s.retries, func() error {
			_, err := conn.ExecContext(ctx, m.sql)
			return err
		})
		if err != nil {
			return wrapErr("migrate: apply "+m.version, err)
		}
		err = retry(ctx, &s.retries, func() error {
			_, err := conn.ExecContext(ctx, `INSERT INTO voltro_schema_migrations (version, applied_at)
				VALUES (?, UTC_TIMESTAMP(6)) ON DUPLICATE KEY UPDATE version = version`, m.version)
			return err
		})
		if err != nil {
			return wrapErr("migrate: record "+m.version, err)
		}
		s.log.Info("mysql store: migration applied", "version", m.version, "took", time.Since(start).Round(time.Millisecond))
		if token != "" {
			if err := s.refreshMigrationLease(ctx, conn, token); err != nil {
				return err
			}
		}
	}
	return nil
}

// migrationLock takes the migration lock on conn and returns its release
// and, on Galera, the token of the lease row.
func (s *Store) migrationLock(ctx context.Context, conn *sql.Conn) (string, func(), error) {
	name := lockName(s.namespace, s.database, "migrate")
	for {
		var got sql.NullInt64
		if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 5)", name).Scan(&got); err != nil {
			return "", nil, wrapErr("migrate: take the migration lock", err)
		}
		if got.Valid && got.Int64 == 1 {
			break
		}
		if !got.Valid {
			return "", nil, errs.New(errs.CodeUnavailable, "mysql store: migrate: GET_LOCK(%s) returned NULL", name)
		}
		if err := ctx.Err(); err != nil {
			return "", nil, fmt.Errorf("mysql store: migrate: waiting for the migration lock: %w", err)
		}
		s.log.Info("mysql store: waiting for another process to finish migrating")
	}
	release := func() {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = conn.ExecContext(c, "DO RELEASE_LOCK(?)", name)
	}
	if !s.server.galera {
		return "", release, nil
	}
	token, err := s.takeMigrationLease(ctx, conn)
	if err != nil {
		release()
		return "", nil, err
	}
	return token, func() {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = retry(c, &s.retries, func() error {
			_, err := conn.ExecContext(c, "DELETE FROM voltro_migration_lock WHERE id = 1 AND holder = ?", token)
			return err
		})
		release()
	}, nil
}

// takeMigrationLease waits for the cluster-wide migration lease (Galera).
func (s *Store) takeMigrationLease(ctx context.Context, conn *sql.Conn) (string, error) {
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS voltro_migration_lock (
		id         TINYINT      NOT NULL PRIMARY KEY,
		holder     VARCHAR(255) NOT NULL,
		expires_at DATETIME(6)  NOT NULL
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`); err != nil {
		return "", wrapErr("migrate: create voltro_migration_lock", err)
	}
	host, _ := os.Hostname()
	token := fmt.Sprintf("%s-%d-%d", host, os.Getpid(), time.Now().UnixNano())
	for {
		if err := s.refreshMigrationLease(ctx, conn, token); err == nil {
			return token, nil
		} else if !errors.Is(err, errs.ErrLocked) {
			return "", err
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("mysql store: migrate: waiting for the migration lease: %w", ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// refreshMigrationLease takes or extends the lease row; errs.CodeLocked when
// another process holds it. The holder column is assigned first, so the
// later assignments see whether it became ours (left-to-right ODKU).
func (s *Store) refreshMigrationLease(ctx context.Context, conn *sql.Conn, token string) error {
	err := retry(ctx, &s.retries, func() error {
		_, err := conn.ExecContext(ctx, `INSERT INTO voltro_migration_lock (id, holder, expires_at)
			VALUES (1, ?, TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(6)))
			ON DUPLICATE KEY UPDATE
				holder = IF(holder = VALUES(holder) OR expires_at <= UTC_TIMESTAMP(6), VALUES(holder), holder),
				expires_at = IF(holder = VALUES(holder), VALUES(expires_at), expires_at)`,
			token, migrationLeaseTTL.Microseconds())
		return err
	})
	if err != nil {
		return wrapErr("migrate: take the migration lease", err)
	}
	var holder string
	err = conn.QueryRowContext(ctx, "SELECT holder FROM voltro_migration_lock WHERE id = 1").Scan(&holder)
	if errors.Is(err, sql.ErrNoRows) {
		// The holder seen by our upsert released the lease (deleted the
		// row, on another node) between our two statements: try again.
		return errs.New(errs.CodeLocked, "migration lease released while taking it")
	}
	if err != nil {
		return wrapErr("migrate: read the migration lease", err)
	}
	if holder != token {
		return errs.New(errs.CodeLocked, "migration lease held by %s", holder)
	}
	return nil
}
