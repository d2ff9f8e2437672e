// Cluster-wide facts: the config row, the lock mode resolution and the
// epoch ledger listing.

package mysql

import (
	"context"
	"database/sql"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

func (s *Store) EnsureClusterConfig(ctx context.Context, cfg store.ClusterConfig) (store.ClusterConfig, error) {
	_, err := s.exec(ctx, `INSERT INTO voltro_cluster_config (id, shard_count, groups_json, created_at)
		VALUES (1, ?, ?, UTC_TIMESTAMP(6)) ON DUPLICATE KEY UPDATE id = id`, cfg.ShardCount, jsonStrings(cfg.Groups))
	if err != nil {
		return store.ClusterConfig{}, wrapErr("store the cluster config", err)
	}
	var out store.ClusterConfig
	var groups string
	err = s.db.QueryRowContext(ctx, "SELECT shard_count, groups_json FROM voltro_cluster_config WHERE id = 1").Scan(&out.ShardCount, &groups)
	if err != nil {
		return store.ClusterConfig{}, wrapErr("read the cluster config", err)
	}
	out.Groups = parseStrings(groups)
	return out, nil
}

// ResolveLockMode: auto is row on a wsrep (Galera/PXC) node, where GET_LOCK
// is node-local, and advisory on a single-primary server.
func (s *Store) ResolveLockMode(ctx context.Context, requested store.LockMode) (store.LockMode, string, error) {
	switch requested {
	case store.LockAuto, "":
	case store.LockRow:
		return store.LockRow, "set explicitly", nil
	case store.LockAdvisory:
		galera, err := wsrepOn(ctx, s.db)
		if err != nil {
			return "", "", err
		}
		if galera {
			s.log.Warn("mysql store: advisory shard locks on a Galera node are node-local: runners on other nodes will not see them; use row or auto")
			return store.LockAdvisory, "set explicitly (wsrep/Galera detected: GET_LOCK is node-local)", nil
		}
		return store.LockAdvisory, "set explicitly", nil
	default:
		return "", "", errs.New(errs.CodeInvalidConfig, "unknown shard lock mode %q (allowed: auto, row, advisory)", requested)
	}
	galera, err := wsrepOn(ctx, s.db)
	if err != nil {
		return "", "", err
	}
	if galera {
		return store.LockRow, "wsrep/Galera cluster detected", nil
	}
	return store.LockAdvisory, "single-primary server: GET_LOCK", nil
}

func (s *Store) ShardLocks(ctx context.Context) ([]store.ShardLock, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT shard, owner, epoch, acquired_at, expires_at,
		expires_at IS NOT NULL AND expires_at <= UTC_TIMESTAMP(6)
		FROM voltro_shard_locks ORDER BY shard`)
	if err != nil {
		return nil, wrapErr("list shard locks", err)
	}
	defer rows.Close()
	var out []store.ShardLock
	for rows.Next() {
		var l store.ShardLock
		var acquired, expires sql.NullTime
		if err := rows.Scan(&l.Shard, &l.Owner, &l.Epoch, &acquired, &expires, &l.Expired); err != nil {
			return nil, wrapErr("list shard locks", err)
		}
		l.AcquiredAt, l.ExpiresAt = timeOf(acquired), timeOf(expires)
		out = append(out, l)
	}
	return out, wrapErr("list shard locks", rows.Err())
}

func (s *Store) EnsureClusterSecret(ctx context.Context, candidate string) (string, error) {
	if _, err := s.exec(ctx, `INSERT INTO voltro_cluster_secret (id, secret, created_at)
		VALUES (1, ?, UTC_TIMESTAMP(6)) ON DUPLICATE KEY UPDATE id = id`, candidate); err != nil {
		return "", wrapErr("store the cluster secret", err)
	}
	var out string
	if err := s.db.QueryRowContext(ctx, "SELECT secret FROM voltro_cluster_secret WHERE id = 1").Scan(&out); err != nil {
		return "", wrapErr("read the cluster secret", err)
	}
	return out, nil
}
