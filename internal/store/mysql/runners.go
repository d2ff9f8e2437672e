// The runner registry: one row per runner address, heartbeats stamped by the
// database clock (the heartbeat itself rides the locker's connection).

package mysql

import (
	"context"
	"database/sql"
	"time"

	"github.com/voltro/voltro/internal/store"
)

func (s *Store) RegisterRunner(ctx context.Context, r store.Runner) error {
	_, err := s.exec(ctx, `INSERT INTO voltro_runners
		(address, replica_id, groups_json, entity_types_json, inspect_addr, version, healthy, meta, started_at, last_heartbeat)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))
		ON DUPLICATE KEY UPDATE replica_id = VALUES(replica_id), groups_json = VALUES(groups_json),
			entity_types_json = VALUES(entity_types_json), inspect_addr = VALUES(inspect_addr),
			version = VALUES(version), healthy = VALUES(healthy), meta = VALUES(meta),
			started_at = VALUES(started_at), last_heartbeat = VALUES(last_heartbeat)`,
		r.Address, r.ReplicaID, jsonStrings(r.Groups), jsonStrings(r.EntityTypes), r.InspectAddr, r.Version, r.Healthy, r.Meta)
	return wrapErr("register runner "+r.Address, err)
}

func (s *Store) ListRunners(ctx context.Context) ([]store.Runner, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT address, replica_id, groups_json, entity_types_json, inspect_addr,
		version, healthy, meta, started_at, last_heartbeat,
		TIMESTAMPDIFF(MICROSECOND, last_heartbeat, UTC_TIMESTAMP(6))
		FROM voltro_runners ORDER BY address`)
	if err != nil {
		return nil, wrapErr("list runners", err)
	}
	defer rows.Close()
	var out []store.Runner
	for rows.Next() {
		var r store.Runner
		var groups, types string
		var meta sql.NullString
		var age int64
		if err := rows.Scan(&r.Address, &r.ReplicaID, &groups, &types, &r.InspectAddr, &r.Version, &r.Healthy,
			&meta, &r.StartedAt, &r.LastHeartbeat, &age); err != nil {
			return nil, wrapErr("list runners", err)
		}
		r.Groups, r.EntityTypes, r.Meta = parseStrings(groups), parseStrings(types), meta.String
		r.HeartbeatAge = time.Duration(age) * time.Microsecond
		out = append(out, r)
	}
	return out, wrapErr("list runners", rows.Err())
}

func (s *Store) DeleteRunner(ctx context.Context, address string) error {
	_, err := s.exec(ctx, "DELETE FROM voltro_runners WHERE address = ?", address)
	return wrapErr("delete runner "+address, err)
}
