// Identities that must be unique across live instances: the replica id
// (POD_NAME) and, on MariaDB, the binlog server_id derived from it. Two pods
// given one POD_NAME both look healthy on their own while their binlog
// streams keep knocking each other off (error 4052); only a view of every
// row shows it.

package status

import (
	"cmp"
	"slices"
	"strconv"
)

// duplicateAdvice is printed with every duplicate.
const duplicateAdvice = "give every instance its own POD_NAME (a StatefulSet's pod name): on MariaDB instances with one replica id derive one binlog server_id, and the server keeps dropping one stream for the other (error 4052)"

// markDuplicates finds the replica ids and binlog server_ids several live
// instances share, marks their rows, and returns the groups.
func markDuplicates(rows []Instance) []Duplicate {
	type key struct{ kind, value string }
	groups := map[key][]Identity{}
	add := func(k key, id Identity) {
		if !slices.Contains(groups[k], id) {
			groups[k] = append(groups[k], id)
		}
	}
	for _, in := range rows {
		if in.Stale || in.AnsweredBy != nil {
			continue // a dead row's successor is not its duplicate
		}
		id := Identity{ReplicaID: in.ReplicaID, RunnerAddress: in.RunnerAddress}
		if in.Source == "runners" {
			add(key{"replicaId", in.ReplicaID}, id)
		}
		for _, other := range in.sameReplica { // what the instance itself sees
			add(key{"replicaId", in.ReplicaID}, id)
			add(key{"replicaId", in.ReplicaID}, Identity{ReplicaID: in.ReplicaID, RunnerAddress: other})
		}
		if in.BinlogServerID != nil {
			add(key{"binlogServerId", strconv.FormatUint(uint64(*in.BinlogServerID), 10)}, id)
		}
	}
	out := []Duplicate{}
	for k, ids := range groups {
		if len(ids) < 2 {
			continue
		}
		slices.SortFunc(ids, func(a, b Identity) int {
			return cmp.Or(cmp.Compare(a.ReplicaID, b.ReplicaID), cmp.Compare(a.RunnerAddress, b.RunnerAddress))
		})
		out = append(out, Duplicate{Kind: k.kind, Value: k.value, Instances: ids})
		for i := range rows {
			if slices.Contains(ids, Identity{ReplicaID: rows[i].ReplicaID, RunnerAddress: rows[i].RunnerAddress}) && !rows[i].Stale {
				rows[i].Duplicate = true
			}
		}
	}
	slices.SortFunc(out, func(a, b Duplicate) int { return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Value, b.Value)) })
	return out
}
