package status

// The retention in force: instances report their own setting and whether
// they sweep (hold the retention shard); the cluster applies the sweeping
// instance's.

import (
	"fmt"
	"maps"
	"strings"
	"time"
)

// retentionInForce derives the report's retention from the rows.
func retentionInForce(rows []Instance) *RetentionInForce {
	var from *Instance
	for i := range rows {
		rt := rows[i].Retention
		if rt == nil || rows[i].AnsweredBy != nil {
			continue
		}
		if from == nil || (rt.Sweeping && !from.Retention.Sweeping) {
			from = &rows[i]
		}
	}
	if from == nil {
		return nil
	}
	rt := from.Retention
	out := &RetentionInForce{
		Runs: rt.Runs, DeadLetters: rt.DeadLetters, RunsSeconds: rt.RunsSeconds, DeadLettersSeconds: rt.DeadLettersSeconds,
		OldestSeconds: map[string]float64{}, Differ: []Identity{},
	}
	if rt.Sweeping {
		out.SweptBy = &Identity{ReplicaID: from.ReplicaID, RunnerAddress: from.RunnerAddress}
		out.LastPassAgeSeconds = rt.LastPassAgeSeconds
		out.OldestSeconds = maps.Clone(rt.OldestSeconds)
		if out.OldestSeconds == nil {
			out.OldestSeconds = map[string]float64{}
		}
	}
	for _, r := range rows {
		if o := r.Retention; o != nil && (o.RunsSeconds != rt.RunsSeconds || o.DeadLettersSeconds != rt.DeadLettersSeconds) {
			out.Differ = append(out.Differ, Identity{ReplicaID: r.ReplicaID, RunnerAddress: r.RunnerAddress})
		}
	}
	return out
}

// writeRetention is the table's retention line.
func writeRetention(p *painter, r *Report) {
	rt := r.Retention
	if rt == nil {
		p.line("", "retention: unknown (no instance asked reported it)")
		return
	}
	s := fmt.Sprintf("retention: finished runs and processed messages %s, dead letters %s", rt.Runs, rt.DeadLetters)
	if rt.SweptBy == nil {
		s += "; no instance asked holds the retention shard now (whichever does sweeps)"
	} else {
		s += fmt.Sprintf("; swept by %s (%s)", rt.SweptBy.ReplicaID, rt.SweptBy.RunnerAddress)
		if rt.LastPassAgeSeconds != nil {
			s += ", last pass " + age(seconds(*rt.LastPassAgeSeconds)) + " ago"
		} else {
			s += ", no pass yet"
		}
		var kept []string
		for _, k := range []struct{ key, name string }{{"runs", "finished run"}, {"processed", "processed message"}, {"dead", "dead letter"}} {
			if v, ok := rt.OldestSeconds[k.key]; ok {
				kept = append(kept, k.name+" "+age(seconds(v)))
			}
		}
		if len(kept) > 0 {
			s += "; oldest kept: " + strings.Join(kept, ", ")
		}
	}
	p.line("", s)
	for _, d := range rt.Differ {
		p.line(ansiYellow, fmt.Sprintf("  ! %s (%s) is set otherwise: its setting applies only while it holds the retention shard; set VOLTRO_RETENTION and VOLTRO_DEAD_LETTER_RETENTION alike everywhere", d.ReplicaID, d.RunnerAddress))
	}
}

// age is human, with days for what is a day or older.
func age(d time.Duration) string {
	const day = 24 * time.Hour
	if d < day {
		return human(d)
	}
	if h := (d % day) / time.Hour; h != 0 {
		return fmt.Sprintf("%dd%dh", d/day, h)
	}
	return fmt.Sprintf("%dd", d/day)
}
