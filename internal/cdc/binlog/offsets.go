// The per-replica resume position, kept in _voltro_cdc_offsets on the
// shared database.

package binlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// OffsetsTable holds one GTID position per replica id.
const OffsetsTable = "_voltro_cdc_offsets"

// Offsets reads and writes replica positions through the application pool.
type Offsets struct {
	DB *sql.DB
}

// Ensure creates the table when missing.
func (o Offsets) Ensure(ctx context.Context) error {
	_, err := o.DB.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+OffsetsTable+` (
		replica_id VARCHAR(191) NOT NULL PRIMARY KEY,
		server_id INT UNSIGNED NOT NULL,
		gtid VARCHAR(2048) NOT NULL,
		schema_version INT NOT NULL DEFAULT 1,
		updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
	)`)
	if err != nil {
		return fmt.Errorf("create %s: %w", OffsetsTable, err)
	}
	return nil
}

// Load returns the stored GTID position of replica; ok is false when the
// replica has none yet.
func (o Offsets) Load(ctx context.Context, replica string) (gtid string, ok bool, err error) {
	err = o.DB.QueryRowContext(ctx, `SELECT gtid FROM `+OffsetsTable+` WHERE replica_id = ?`, replica).Scan(&gtid)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("load binlog offset of %s: %w", replica, err)
	}
	return gtid, true, nil
}

// Save stores the position of replica.
func (o Offsets) Save(ctx context.Context, replica string, serverID uint32, gtid string) error {
	_, err := o.DB.ExecContext(ctx, `INSERT INTO `+OffsetsTable+` (replica_id, server_id, gtid, updated_at)
		VALUES (?, ?, ?, CURRENT_TIMESTAMP(6))
		ON DUPLICATE KEY UPDATE server_id = VALUES(server_id), gtid = VALUES(gtid), updated_at = VALUES(updated_at)`,
		replica, serverID, gtid)
	if err != nil {
		return fmt.Errorf("save binlog offset of %s: %w", replica, err)
	}
	return nil
}
