// The change feed's SQL on MariaDB and MySQL (internal/cdc): the row SQL of
// the change data API, and for the binlog reader the resume positions in
// _voltro_cdc_offsets (migration 0500) and the server settings it needs,
// read through the application pool or the replication user's connection.

package mysql

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/rowsql"
)

// RowDialect is the row SQL of d (store.MariaDB or store.MySQL): MariaDB
// 10.11 has INSERT and DELETE … RETURNING, not UPDATE; MySQL has none.
func RowDialect(d store.Dialect) rowsql.Dialect {
	return rowsql.Dialect{
		Name:            d,
		QuoteChar:       "`",
		InsertReturning: d == store.MariaDB,
		DeleteReturning: d == store.MariaDB,
		ForUpdate:       " FOR UPDATE",
		PrimaryKeyQuery: `SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE
			WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND CONSTRAINT_NAME = 'PRIMARY'
			ORDER BY ORDINAL_POSITION`,
		SerialTable: "CREATE TABLE %s (id BIGINT AUTO_INCREMENT PRIMARY KEY, sent_ns BIGINT NOT NULL, payload VARCHAR(64) NOT NULL)",
		Pool:        func(dsn string) (*sql.DB, error) { return sql.Open("mysql", dsn) },
	}
}

// cdcOffsetsMigration is the file that creates store.CDCOffsetsTable.
const cdcOffsetsMigration = "migrations/0500_cdc_offsets.sql"

// BinlogOffsets are the positions of the binlog readers kept through db,
// the application pool.
func BinlogOffsets(db *sql.DB) store.BinlogOffsets { return binlogOffsets{db} }

type binlogOffsets struct{ db *sql.DB }

// PrepareBinlogOffsets applies migration 0500 (one idempotent statement) on
// its own, for a feed opened on a database the engine's migrations have not
// run on (package changes used alone). Migrate applies it with the rest.
func PrepareBinlogOffsets(ctx context.Context, db *sql.DB) error {
	ddl, err := migrationFS.ReadFile(cdcOffsetsMigration)
	if err != nil {
		return err
	}
	err = retry(ctx, nil, func() error {
		_, err := db.ExecContext(ctx, string(ddl))
		return err
	})
	return wrapErr("create "+store.CDCOffsetsTable, err)
}

func (o binlogOffsets) LoadOffset(ctx context.Context, replica string) (gtid string, ok bool, err error) {
	err = retry(ctx, nil, func() error {
		return o.db.QueryRowContext(ctx, `SELECT gtid FROM `+store.CDCOffsetsTable+` WHERE replica_id = ?`, replica).Scan(&gtid)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, wrapErr("load binlog offset of "+replica, err)
	}
	return gtid, true, nil
}

func (o binlogOffsets) SaveOffset(ctx context.Context, replica string, serverID uint32, gtid string) error {
	err := retry(ctx, nil, func() error {
		_, err := o.db.ExecContext(ctx, `INSERT INTO `+store.CDCOffsetsTable+` (replica_id, server_id, gtid, updated_at)
			VALUES (?, ?, ?, CURRENT_TIMESTAMP(6))
			ON DUPLICATE KEY UPDATE server_id = VALUES(server_id), gtid = VALUES(gtid), updated_at = VALUES(updated_at)`,
			replica, serverID, gtid)
		return err
	})
	return wrapErr("save binlog offset of "+replica, err)
}

func (o binlogOffsets) ServerPosition(ctx context.Context) (string, error) {
	var pos string
	err := o.db.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&pos)
	return pos, wrapErr("read gtid_binlog_pos", err)
}

// ReadBinlogServer asks the server, through a connection of the replication
// user, for the binlog settings and the user's grants.
func ReadBinlogServer(ctx context.Context, db *sql.DB) (store.BinlogServer, error) {
	var (
		s              store.BinlogServer
		logBin, strict int64
		serverID       int64
	)
	err := db.QueryRowContext(ctx, `SELECT @@log_bin, @@binlog_format, @@binlog_row_image,
		@@binlog_row_metadata, @@gtid_strict_mode, @@server_id, VERSION(), CURRENT_USER()`).
		Scan(&logBin, &s.Format, &s.RowImage, &s.RowMetadata, &strict, &serverID, &s.Version, &s.User)
	if err != nil {
		return s, wrapErr("read binlog settings", err)
	}
	s.LogBin, s.GTIDStrict, s.ServerID = logBin == 1, strict == 1, uint32(serverID)
	rows, err := db.QueryContext(ctx, "SHOW GRANTS")
	if err != nil {
		return s, wrapErr("read replication grants", err)
	}
	defer rows.Close()
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			return s, wrapErr("read replication grants", err)
		}
		s.Grants = append(s.Grants, strings.ToUpper(g))
	}
	return s, wrapErr("read replication grants", rows.Err())
}
