// Cluster facts: the cluster config row, the runner registry and the shard
// lock ledger as read by status displays.

package sqlite

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/voltro/voltro/internal/store"
)

func (s *Store) EnsureClusterConfig(ctx context.Context, cfg store.ClusterConfig) (store.ClusterConfig, error) {
	groups, err := jsonList(cfg.Groups)
	if err != nil {
		return store.ClusterConfig{}, err
	}
	if _, err := s.w.ExecContext(ctx, `INSERT INTO voltro_cluster_config (id, shard_count, groups, created_at)
		VALUES (1, ?, ?, ?) ON CONFLICT (id) DO NOTHING`, cfg.ShardCount, groups, s.now()); err != nil {
		return store.ClusterConfig{}, s.wrap(err, "ensure cluster config")
	}
	var got store.ClusterConfig
	var stored string
	if err := s.w.QueryRowContext(ctx, `SELECT shard_count, groups FROM voltro_cluster_config WHERE id = 1`).Scan(&got.ShardCount, &stored); err != nil {
		return store.ClusterConfig{}, s.wrap(err, "ensure cluster config")
	}
	if err := json.Unmarshal([]byte(stored), &got.Groups); err != nil {
		return store.ClusterConfig{}, fmt.Errorf("sqlite: cluster config groups %q: %w", stored, err)
	}
	return got, nil
}

func (s *Store) RegisterRunner(ctx context.Context, r store.Runner) error {
	groups, err := jsonList(r.Groups)
	if err != nil {
		return err
	}
	types, err := jsonList(r.EntityTypes)
	if err != nil {
		return err
	}
	t := s.now()
	_, err = s.w.ExecContext(ctx, `INSERT INTO voltro_runners
		(address, replica_id, groups, entity_types, inspect_addr, version, healthy, meta, started_at, last_heartbeat)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (address) DO UPDATE SET
			replica_id = excluded.replica_id, groups = excluded.groups, entity_types = excluded.entity_types,
			inspect_addr = excluded.inspect_addr, version = excluded.version, healthy = excluded.healthy,
			meta = excluded.meta, started_at = excluded.started_at, last_heartbeat = excluded.last_heartbeat`,
		r.Address, r.ReplicaID, groups, types, r.InspectAddr, r.Version, r.Healthy, r.Meta, t, t)
	return s.wrap(err, "register runner")
}

func (s *Store) ListRunners(ctx context.Context) ([]store.Runner, error) {
	t := s.now()
	rows, err := s.r.QueryContext(ctx, `SELECT address, replica_id, groups, entity_types, inspect_addr, version,
		healthy, meta, started_at, last_heartbeat FROM voltro_runners ORDER BY address`)
	if err != nil {
		return nil, s.wrap(err, "list runners")
	}
	defer rows.Close()
	var out []store.Runner
	for rows.Next() {
		var r store.Runner
		var groups, types string
		var started, beat int64
		if err := rows.Scan(&r.Address, &r.ReplicaID, &groups, &types, &r.InspectAddr, &r.Version,
			&r.Healthy, &r.Meta, &started, &beat); err != nil {
			return nil, s.wrap(err, "list runners")
		}
		if err := json.Unmarshal([]byte(groups), &r.Groups); err != nil {
			return nil, fmt.Errorf("sqlite: runner %s groups: %w", r.Address, err)
		}
		if err := json.Unmarshal([]byte(types), &r.EntityTypes); err != nil {
			return nil, fmt.Errorf("sqlite: runner %s entity types: %w", r.Address, err)
		}
		r.StartedAt, r.LastHeartbeat = fromMicros(started), fromMicros(beat)
		r.HeartbeatAge = ageOf(t, beat)
		out = append(out, r)
	}
	return out, s.wrap(rows.Err(), "list runners")
}

func (s *Store) DeleteRunner(ctx context.Context, address string) error {
	_, err := s.w.ExecContext(ctx, `DELETE FROM voltro_runners WHERE address = ?`, address)
	return s.wrap(err, "delete runner")
}

func (s *Store) ShardLocks(ctx context.Context) ([]store.ShardLock, error) {
	t := s.now()
	rows, err := s.r.QueryContext(ctx, `SELECT shard, owner, epoch, acquired_at, expires_at,
		expires_at <> 0 AND expires_at <= ? FROM voltro_shard_locks ORDER BY shard`, t)
	if err != nil {
		return nil, s.wrap(err, "shard locks")
	}
	defer rows.Close()
	var out []store.ShardLock
	for rows.Next() {
		var l store.ShardLock
		var acquired, expires int64
		if err := rows.Scan(&l.Shard, &l.Owner, &l.Epoch, &acquired, &expires, &l.Expired); err != nil {
			return nil, s.wrap(err, "shard locks")
		}
		l.AcquiredAt, l.ExpiresAt = fromMicros(acquired), fromMicros(expires)
		out = append(out, l)
	}
	return out, s.wrap(rows.Err(), "shard locks")
}

// jsonList encodes a string list as a JSON array (never null).
func jsonList(v []string) (string, error) {
	if v == nil {
		v = []string{}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("sqlite: encode list: %w", err)
	}
	return string(b), nil
}

// EnsureClusterSecret keeps the secret in the file, like the SQL stores
// (nothing listens for peers on SQLite, but every handle agrees).
func (s *Store) EnsureClusterSecret(ctx context.Context, candidate string) (string, error) {
	if _, err := s.w.ExecContext(ctx, `INSERT INTO voltro_cluster_secret (id, secret, created_at)
		VALUES (1, ?, ?) ON CONFLICT (id) DO NOTHING`, candidate, s.now()); err != nil {
		return "", s.wrap(err, "store the cluster secret")
	}
	var out string
	if err := s.w.QueryRowContext(ctx, `SELECT secret FROM voltro_cluster_secret WHERE id = 1`).Scan(&out); err != nil {
		return "", s.wrap(err, "read the cluster secret")
	}
	return out, nil
}
