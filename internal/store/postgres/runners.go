// Cluster facts: the cluster config row, the runner registry and the shard
// lock ledger as read by status displays.

package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voltro/voltro/internal/store"
)

func (s *Store) EnsureClusterConfig(ctx context.Context, cfg store.ClusterConfig) (store.ClusterConfig, error) {
	groups := cfg.Groups
	if groups == nil {
		groups = []string{}
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO voltro_cluster_config (id, shard_count, groups, created_at) VALUES (1, $1, $2, now())
		ON CONFLICT (id) DO NOTHING`, cfg.ShardCount, groups); err != nil {
		return store.ClusterConfig{}, wrapErr("ensure cluster config", err)
	}
	// A separate statement: its snapshot sees a row a concurrent caller won with.
	var out store.ClusterConfig
	if err := s.pool.QueryRow(ctx, `SELECT shard_count, groups FROM voltro_cluster_config WHERE id = 1`).Scan(&out.ShardCount, &out.Groups); err != nil {
		return store.ClusterConfig{}, wrapErr("ensure cluster config", err)
	}
	return out, nil
}

func (s *Store) RegisterRunner(ctx context.Context, r store.Runner) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO voltro_runners
		(address, replica_id, groups, entity_types, inspect_addr, version, healthy, meta, started_at, last_heartbeat)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now(), now())
		ON CONFLICT (address) DO UPDATE SET
			replica_id = excluded.replica_id, groups = excluded.groups, entity_types = excluded.entity_types,
			inspect_addr = excluded.inspect_addr, version = excluded.version, healthy = excluded.healthy,
			meta = excluded.meta, started_at = now(), last_heartbeat = now()`,
		r.Address, r.ReplicaID, nonNil(r.Groups), nonNil(r.EntityTypes), r.InspectAddr, r.Version, r.Healthy, r.Meta)
	return wrapErr("register runner", err)
}

func (s *Store) ListRunners(ctx context.Context) ([]store.Runner, error) {
	rows, err := s.pool.Query(ctx, `SELECT address, replica_id, groups, entity_types, inspect_addr, version, healthy, meta,
			started_at, last_heartbeat, (extract(epoch FROM now() - last_heartbeat) * 1000000)::bigint
		FROM voltro_runners ORDER BY address`)
	if err != nil {
		return nil, wrapErr("list runners", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Runner, error) {
		var r store.Runner
		var age int64
		err := row.Scan(&r.Address, &r.ReplicaID, &r.Groups, &r.EntityTypes, &r.InspectAddr, &r.Version, &r.Healthy, &r.Meta,
			&r.StartedAt, &r.LastHeartbeat, &age)
		r.HeartbeatAge = time.Duration(age) * time.Microsecond
		return r, err
	})
	if err != nil {
		return nil, wrapErr("list runners", err)
	}
	return out, nil
}

func (s *Store) DeleteRunner(ctx context.Context, address string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM voltro_runners WHERE address = $1`, address)
	return wrapErr("delete runner", err)
}

func (s *Store) ShardLocks(ctx context.Context) ([]store.ShardLock, error) {
	rows, err := s.pool.Query(ctx, `SELECT shard, owner, epoch, acquired_at, expires_at,
			coalesce(expires_at <= now(), false)
		FROM voltro_shard_locks ORDER BY shard`)
	if err != nil {
		return nil, wrapErr("shard locks", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.ShardLock, error) {
		var l store.ShardLock
		var acquired, expires *time.Time
		err := row.Scan(&l.Shard, &l.Owner, &l.Epoch, &acquired, &expires, &l.Expired)
		if acquired != nil {
			l.AcquiredAt = *acquired
		}
		if expires != nil {
			l.ExpiresAt = *expires
		}
		return l, err
	})
	if err != nil {
		return nil, wrapErr("shard locks", err)
	}
	return out, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (s *Store) EnsureClusterSecret(ctx context.Context, candidate string) (string, error) {
	if _, err := s.pool.Exec(ctx, `INSERT INTO voltro_cluster_secret (id, secret, created_at) VALUES (1, $1, now())
		ON CONFLICT (id) DO NOTHING`, candidate); err != nil {
		return "", wrapErr("store the cluster secret", err)
	}
	// A separate statement: its snapshot sees a row a concurrent caller won with.
	var out string
	if err := s.pool.QueryRow(ctx, `SELECT secret FROM voltro_cluster_secret WHERE id = 1`).Scan(&out); err != nil {
		return "", wrapErr("read the cluster secret", err)
	}
	return out, nil
}
