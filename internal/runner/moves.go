package runner

// Ownership changes as an operator reads them: every shard acquired, lost
// or handed over is logged at Debug (failover tests rebuild ownership from
// those lines), and each pass sums its changes into one Info (or Warn, for
// losses) line per kind: a failover that moves 150 shards is one line
// saying from whom, not 150.

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// moveLog collects one pass's ownership changes, by peer or reason.
type moveLog struct {
	acquired map[string]int // previous owner ("" free) -> shards taken
	lost     map[string]int // reason -> shards lost
	handed   map[string]int // proposed new owner -> shards handed over
}

func (m *moveLog) add(kind *map[string]int, key string) {
	if *kind == nil {
		*kind = map[string]int{}
	}
	(*kind)[key]++
}

// flushMoves logs what changed since the last flush, one line per kind.
func (r *Runner) flushMoves() {
	m := &r.moveLog
	if n := total(m.acquired); n > 0 {
		r.log.Info("workflow runner: shards acquired", "shards", n, "from", summary(m.acquired, "free"), "held", len(r.held))
	}
	if n := total(m.lost); n > 0 {
		r.log.Warn("workflow runner: shards lost", "shards", n, "reason", summary(m.lost, ""), "held", len(r.held))
	}
	if n := total(m.handed); n > 0 {
		r.log.Info("workflow runner: shards handed over", "shards", n, "to", summary(m.handed, "nobody yet"), "held", len(r.held))
	}
	*m = moveLog{}
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// summary renders {"a:1": 3, "": 2} as "a:1 (3), free (2)".
func summary(m map[string]int, empty string) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteString(", ")
		}
		name := k
		if name == "" {
			name = empty
		}
		b.WriteString(name)
		b.WriteString(" (")
		b.WriteString(strconv.Itoa(m[k]))
		b.WriteString(")")
	}
	return b.String()
}
