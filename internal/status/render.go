// The table: one line per instance, then what needs attention (a runner on
// a loopback address in red with its fix, stale and unreachable instances,
// drain problems), then the shared state. Colour only when asked (a
// terminal); without it every mark is also in the text.

package status

import (
	"fmt"
	"github.com/voltro/voltro/internal/config"
	"io"
	"slices"
	"strconv"
	"strings"
)

const (
	ansiRed    = "\033[31m"
	ansiYellow = "\033[33m"
	ansiBold   = "\033[1m"
	ansiReset  = "\033[0m"
)

// drainCellMax bounds the drain cell; the full problems follow the table.
const drainCellMax = 40

var header = []string{"REPLICA", "PROCESS", "RUNNER", "DIALECT", "TIER", "CDC", "COORDINATION", "SHARD-LOCK", "SERVER-ID", "SHARDS", "DRAIN", "HEARTBEAT", "STATE"}

// WriteTable renders r as the human table.
func WriteTable(w io.Writer, r *Report, colour bool) error {
	p := &painter{w: w, colour: colour}
	p.line("", intro(r))
	if len(r.Instances) == 0 {
		if r.ProcessFilter != "" {
			p.line("", fmt.Sprintf("no instance matches --process %s (by process name or replica id)", r.ProcessFilter))
		} else {
			p.line("", "no running instance found")
		}
	} else {
		cells := [][]string{header}
		for _, in := range r.Instances {
			cells = append(cells, instanceCells(in))
		}
		widths := columnWidths(cells)
		p.line(ansiBold, pad(cells[0], widths))
		for i, in := range r.Instances {
			p.line(rowColour(in), pad(cells[i+1], widths))
		}
		writeShardLocks(p, r.Instances)
		writeAttention(p, r.Instances)
	}
	writeDuplicates(p, r.Duplicates)
	writeShared(p, r)
	writeRetention(p, r)
	return p.err
}

func intro(r *Report) string {
	var from string
	if r.Source.Kind == "runners" {
		from = fmt.Sprintf("the runners table of %s %s", r.Source.Dialect, r.Source.Database)
	} else {
		from = "the local registry " + r.Source.RegistryDir
		if r.Source.Dialect != "" {
			from += fmt.Sprintf(" (%s %s)", r.Source.Dialect, r.Source.Database)
		}
	}
	s := fmt.Sprintf("%d instance(s) from %s", len(r.Instances), from)
	if r.Source.Kind == "runners" {
		// single-process runner storage keeps no runner row: those
		// instances come from the local registry, and the header says so
		local := 0
		for _, in := range r.Instances {
			if in.Source != "runners" {
				local++
			}
		}
		if local > 0 {
			s = fmt.Sprintf("%d instance(s): %d from %s, %d from the local registry %s (single-process runner storage keeps no runner row)",
				len(r.Instances), len(r.Instances)-local, from, local, r.Source.RegistryDir)
		}
	}
	if r.StaleAfterSeconds > 0 {
		s += fmt.Sprintf("; stale after %s without a heartbeat", human(seconds(r.StaleAfterSeconds)))
	}
	return s
}

func instanceCells(in Instance) []string {
	server := "-"
	if in.BinlogServerID != nil {
		server = strconv.FormatUint(uint64(*in.BinlogServerID), 10)
	}
	shards := "-"
	if in.OwnedShardsSource != "none" {
		shards = strconv.Itoa(in.OwnedShards)
		if in.OwnedShardsSource == "ledger" {
			shards += " (ledger)"
		}
	}
	hb := "-"
	if in.HeartbeatAgeSeconds != nil {
		hb = human(seconds(*in.HeartbeatAgeSeconds))
	}
	cdc := cell(in.CDCFlavor)
	if in.CDCProblem != "" {
		cdc += " (DEGRADED)"
	}
	if in.Duplicate && in.BinlogServerID != nil {
		server += " (DUPLICATE)"
	}
	return []string{
		cell(in.ReplicaID), cell(in.Process), cell(in.RunnerAddress), cell(in.Dialect), cell(in.Tier),
		cdc, cell(in.Coordination), cell(in.ShardLock), server, shards,
		drainCell(in), hb, strings.Join(marks(in), ","),
	}
}

// drainCell is "ready", the first problem, or "?" when not asked.
func drainCell(in Instance) string {
	if len(in.Problems) > 0 {
		s := in.Problems[0].Kind + ": " + in.Problems[0].Detail
		if len([]rune(s)) > drainCellMax {
			s = string([]rune(s)[:drainCellMax-1]) + "…"
		}
		return s
	}
	if in.Ready == nil {
		return "?"
	}
	if *in.Ready {
		return "ready"
	}
	return "not ready"
}

// marks are the STATE words of an instance.
func marks(in Instance) []string {
	var m []string
	if in.LocalhostRisk {
		m = append(m, "LOCALHOST")
	}
	if in.Duplicate {
		m = append(m, "DUPLICATE")
	}
	if in.CDCProblem != "" {
		m = append(m, "CDC-DEGRADED")
	}
	if in.AnsweredBy != nil {
		m = append(m, "OTHER-INSTANCE")
	}
	if in.TokenWithheld != "" {
		m = append(m, "TOKEN-WITHHELD")
	}
	if in.Stale {
		m = append(m, "STALE")
	}
	if !in.Reachable {
		m = append(m, "UNREACHABLE")
	}
	if in.Ready != nil && !*in.Ready {
		m = append(m, "NOT-READY")
	}
	if len(m) == 0 {
		m = append(m, "ok")
	}
	return m
}

func rowColour(in Instance) string {
	switch {
	case in.LocalhostRisk || in.Duplicate || in.CDCProblem != "":
		return ansiRed
	case in.Stale || !in.Reachable || (in.Ready != nil && !*in.Ready):
		return ansiYellow
	}
	return ""
}

func writeAttention(p *painter, ins []Instance) {
	var lines [][2]string // colour, text
	for _, in := range ins {
		who := in.ReplicaID
		if in.LocalhostRisk {
			lines = append(lines, [2]string{ansiRed, fmt.Sprintf("  ! %s LOCALHOST: runner %s is a loopback address: %s; %s", who, in.RunnerAddress, config.LocalhostEffect, in.LocalhostFix)})
		}
		if in.CDCProblem != "" {
			lines = append(lines, [2]string{ansiRed, fmt.Sprintf("  ! %s CDC DEGRADED: %s", who, in.CDCProblem)})
		}
		if in.Stale {
			lines = append(lines, [2]string{ansiYellow, fmt.Sprintf("  ! %s STALE: %s", who, in.StaleReason)})
		}
		if !in.Reachable && !(in.Stale && in.Source == "registry") { // a gone process: STALE says it
			lines = append(lines, [2]string{ansiYellow, fmt.Sprintf("  ! %s UNREACHABLE: %s", who, in.UnreachableReason)})
		}
		if in.TokenWithheld != "" {
			lines = append(lines, [2]string{ansiYellow, fmt.Sprintf("  ! %s TOKEN WITHHELD: %s", who, in.TokenWithheld)})
		}
		for _, pr := range in.Problems {
			lines = append(lines, [2]string{"", fmt.Sprintf("  ! %s NOT READY: %s: %s", who, pr.Kind, pr.Detail)})
		}
		for _, pr := range in.Notes {
			lines = append(lines, [2]string{ansiRed, fmt.Sprintf("  ! %s SEES: %s: %s", who, pr.Kind, pr.Detail)})
		}
	}
	if len(lines) == 0 {
		return
	}
	p.line("", "")
	p.line(ansiBold, "attention:")
	for _, l := range lines {
		p.line(l[0], l[1])
	}
}

// writeShardLocks says why each instance coordinates shards the way the
// SHARD-LOCK column says: one line per mode and reason, naming the
// instances that gave it.
func writeShardLocks(p *painter, ins []Instance) {
	type lock struct{ mode, reason string }
	var order []lock
	who := map[lock][]string{}
	for _, in := range ins {
		if in.ShardLock == "" {
			continue
		}
		k := lock{in.ShardLock, in.ShardLockReason}
		if _, ok := who[k]; !ok {
			order = append(order, k)
		}
		who[k] = append(who[k], in.ReplicaID)
	}
	if len(order) == 0 {
		return
	}
	p.line("", "")
	p.line(ansiBold, "shard locks:")
	for _, k := range order {
		p.line("", fmt.Sprintf("  %s on %s: %s", k.mode, strings.Join(who[k], ", "), orDefault(k.reason, "no reason given")))
	}
}

// writeDuplicates names each identity several live instances share, in red:
// one line per set of instances (one POD_NAME on two pods is a replica id
// and a server_id shared).
func writeDuplicates(p *painter, ds []Duplicate) {
	if len(ds) == 0 {
		return
	}
	p.line("", "")
	p.line(ansiBold+ansiRed, "duplicates:")
	var sets [][]Identity
	whats := map[int][]string{}
	for _, d := range ds {
		what := "replica id " + d.Value
		if d.Kind == "binlogServerId" {
			what = "binlog server_id " + d.Value
		}
		i := slices.IndexFunc(sets, func(s []Identity) bool { return slices.Equal(s, d.Instances) })
		if i < 0 {
			i = len(sets)
			sets = append(sets, d.Instances)
		}
		whats[i] = append(whats[i], what)
	}
	for i, set := range sets {
		parts := make([]string, len(set))
		for j, id := range set {
			parts[j] = id.ReplicaID + " (runner " + cell(id.RunnerAddress) + ")"
		}
		p.line(ansiRed, fmt.Sprintf("  ! DUPLICATE %s on %d live instances: %s; %s", strings.Join(whats[i], " and "), len(set), strings.Join(parts, ", "), duplicateAdvice))
	}
}

func writeShared(p *painter, r *Report) {
	p.line("", "")
	sh := r.Shared
	if sh == nil {
		switch r.Source.Dialect {
		case "":
			p.line("", "shared state: not read (DB_URL is not set)")
		case "memory":
			p.line("", "shared state: none (a memory store is private to its process)")
		default:
			p.line("", "shared state: not read")
		}
		return
	}
	window := human(seconds(sh.ActiveWindowSeconds))
	p.line(ansiBold, fmt.Sprintf("shared state (%s %s):", r.Source.Dialect, r.Source.Database))
	if s := sh.Schedules; s == nil {
		p.line("", "  schedules: no schedule tables yet (no schedule has run on this database)")
	} else {
		p.line("", fmt.Sprintf("  active replicas (schedule runs in the last %s): %s", window, replicaList(s.ActiveReplicas, " (%d)")))
		claims := fmt.Sprintf("  schedule claims (last %s): %d", window, s.RecentClaims)
		if len(s.LatestClaims) > 0 {
			var parts []string
			for i, c := range s.LatestClaims {
				if i == 5 {
					parts = append(parts, fmt.Sprintf("… %d more", len(s.LatestClaims)-5))
					break
				}
				parts = append(parts, fmt.Sprintf("%s → %s %s ago", c.Schedule, c.ReplicaID, human(seconds(c.AgeSeconds))))
			}
			claims += "; latest: " + strings.Join(parts, ", ")
		}
		p.line("", claims)
		running := fmt.Sprintf("  schedule runs running: %d", s.Running)
		if s.Running > 0 {
			running += " (" + replicaList(s.RunningByReplica, ": %d") + ")"
		}
		p.line("", running)
	}
	if w := sh.Workflows; w == nil {
		p.line("", "  workflow runs: no workflow tables")
	} else {
		p.line("", fmt.Sprintf("  workflow runs: %d running, %d suspended", w.Running, w.Suspended))
	}
	p.line("", fmt.Sprintf("  dead letters: %d", sh.Messages.DeadLetters))
	oldest := "none"
	if sh.Messages.OldestUndeliveredSeconds > 0 {
		oldest = human(seconds(sh.Messages.OldestUndeliveredSeconds))
	}
	p.line("", "  oldest undelivered message: "+oldest)
	if len(sh.Messages.UnhostedBacklog) == 0 {
		p.line("", "  unhosted backlog: none")
	}
	for _, u := range sh.Messages.UnhostedBacklog {
		p.line(ansiYellow, fmt.Sprintf("  ! unhosted backlog: %d message(s) for %s (oldest %s): no live runner hosts it; deploy one, or dead-letter them: voltro messages dead --type %s",
			u.Messages, u.EntityType, human(seconds(u.OldestSeconds)), u.EntityType))
	}
	for _, e := range sh.Errors {
		p.line(ansiYellow, "  ! could not read "+e)
	}
}

// replicaList lists replicas with their counts, each formatted by count.
func replicaList(rs []ReplicaRuns, count string) string {
	if len(rs) == 0 {
		return "none"
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.ReplicaID + fmt.Sprintf(count, r.Runs)
	}
	return strings.Join(parts, ", ")
}

func columnWidths(rows [][]string) []int {
	w := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			w[i] = max(w[i], len([]rune(c)))
		}
	}
	return w
}

// pad joins cells into one line, padding every column but the last.
func pad(cells []string, widths []int) string {
	var b strings.Builder
	for i, c := range cells {
		b.WriteString(c)
		if i < len(cells)-1 {
			b.WriteString(strings.Repeat(" ", widths[i]-len([]rune(c))+2))
		}
	}
	return b.String()
}

// painter writes lines, coloured when asked, remembering the first error.
type painter struct {
	w      io.Writer
	colour bool
	err    error
}

func (p *painter) line(colour, s string) {
	if p.err != nil {
		return
	}
	if p.colour && colour != "" && s != "" {
		s = colour + s + ansiReset
	}
	_, p.err = fmt.Fprintln(p.w, s)
}
