package schedule

// What `voltro schedules list` shows of a schedule: its definition, next
// tick, last run and counts.

import "time"

// ScheduleView is one schedule in `voltro schedules list --format json`.
type ScheduleView struct {
	Name         string            `json:"name"`
	Spec         string            `json:"spec,omitempty"`
	TimeZone     string            `json:"timeZone,omitempty"`
	Coordination Coordination      `json:"coordination,omitempty"`
	Overlap      Overlap           `json:"overlap,omitempty"`
	CatchUp      bool              `json:"catchUp"`
	DefinedBy    string            `json:"definedBy,omitempty"` // replica that registered it last
	NextFireAt   time.Time         `json:"nextFireAt,omitzero"`
	LastRun      *Run              `json:"lastRun,omitempty"`
	Counts       map[Outcome]int64 `json:"counts"`
}

// Views turns summaries into views, computing each next tick after now.
func Views(sums []Summary, now time.Time) []ScheduleView {
	out := make([]ScheduleView, 0, len(sums))
	for _, s := range sums {
		v := ScheduleView{Name: s.Name, LastRun: s.Last, Counts: s.Counts}
		if d := s.Definition; d != nil {
			v.Spec, v.TimeZone, v.Coordination, v.Overlap, v.CatchUp, v.DefinedBy = d.Spec, d.TimeZone, d.Coordination, d.Overlap, d.CatchUp, d.ReplicaID
			if spec, err := ParseSpec(d.Spec, d.TimeZone); err == nil {
				v.NextFireAt = spec.Next(now)
			}
		}
		out = append(out, v)
	}
	return out
}
