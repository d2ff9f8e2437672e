package binlog

import "hash/fnv"

// ServerID derives the replication server_id of a replica from its stable
// id (POD_NAME): FNV-1a, never 0 and never the source server's own id, the
// same on every restart. Two replicas with distinct ids collide with
// probability about 1 in 4 billion per pair.
func ServerID(replicaID string, sourceServerID uint32) uint32 {
	name := replicaID
	for i := 0; ; i++ {
		h := fnv.New32a()
		_, _ = h.Write([]byte(name))
		id := h.Sum32()
		if id != 0 && id != sourceServerID {
			return id
		}
		// deterministic re-derivation on the rare clash
		name = replicaID + "#" + string(rune('a'+i%26))
	}
}
