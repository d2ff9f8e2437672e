package sharding

import (
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
)

// ShardID is "group/index".
func ShardID(group string, index int) string { return group + "/" + strconv.Itoa(index) }

// Parse splits a shard id into group and index.
func Parse(id string) (group string, index int, ok bool) {
	i := strings.LastIndexByte(id, '/')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(id[i+1:])
	return id[:i], n, err == nil
}

// For returns the shard of an entity id: a stable hash, identical on every
// runner and across releases.
func For(group, entityID string, count int) string {
	h := fnv.New64a()
	h.Write([]byte(entityID))
	return ShardID(group, int(h.Sum64()%uint64(count)))
}

// All lists every shard of the groups.
func All(groups []string, count int) []string {
	out := make([]string, 0, len(groups)*count)
	for _, g := range groups {
		for i := 0; i < count; i++ {
			out = append(out, ShardID(g, i))
		}
	}
	return out
}

func score(shard, runner string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(shard))
	h.Write([]byte{0})
	h.Write([]byte(runner))
	x := h.Sum64()
	// finalise (splitmix64) so near-identical inputs spread well
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Assign proposes an owner for every shard among runners: rendezvous hashing
// with bounded load (no runner gets more than ceil(shards/runners)). Every
// runner that sees the same inputs computes the same answer.
func Assign(shards, runners []string) map[string]string {
	out := make(map[string]string, len(shards))
	if len(runners) == 0 {
		return out
	}
	rs := slices.Clone(runners)
	slices.Sort(rs)
	rs = slices.Compact(rs)
	capacity := (len(shards) + len(rs) - 1) / len(rs)
	load := make(map[string]int, len(rs))
	ordered := slices.Clone(shards)
	slices.Sort(ordered)
	ranked := make([]string, len(rs))
	for _, sh := range ordered {
		copy(ranked, rs)
		slices.SortFunc(ranked, func(a, b string) int {
			sa, sb := score(sh, a), score(sh, b)
			switch {
			case sa > sb:
				return -1
			case sa < sb:
				return 1
			}
			return strings.Compare(a, b)
		})
		for _, r := range ranked {
			if load[r] < capacity {
				out[sh] = r
				load[r]++
				break
			}
		}
	}
	return out
}
