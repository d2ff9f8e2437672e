package memory

// Workflow introspection in memory: run, step-attempt and event records,
// written a batch at a time, with the SQL stores' upsert semantics.

import (
	"context"
	"slices"
	"sort"

	"github.com/voltro/voltro/internal/store"
)

// Record applies the batch under one lock, record by record in batch
// order: runs and step attempts replace the stored record of their key (a
// zero StartedAt keeps the stored one), events are appended (a zero At is
// now).
func (s *Store) Record(_ context.Context, b store.IntrospectionBatch) error {
	if b.Len() == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.wf()
	for _, r := range b.Runs {
		if old, ok := w.runs[r.ExecutionID]; ok && r.StartedAt.IsZero() {
			r.StartedAt = old.StartedAt
		}
		w.runs[r.ExecutionID] = r
	}
	for _, r := range b.Steps {
		w.steps[r.ExecutionID] = upsertStep(w.steps[r.ExecutionID], r)
	}
	for _, e := range b.Events {
		if e.At.IsZero() {
			e.At = s.now()
		}
		w.events[e.ExecutionID] = append(w.events[e.ExecutionID], e)
	}
	return nil
}

// upsertStep replaces the attempt of r's (seq, attempt) in steps, or
// appends r.
func upsertStep(steps []store.StepRecord, r store.StepRecord) []store.StepRecord {
	for i, old := range steps {
		if old.Seq == r.Seq && old.Attempt == r.Attempt {
			if r.StartedAt.IsZero() {
				r.StartedAt = old.StartedAt
			}
			steps[i] = r
			return steps
		}
	}
	return append(steps, r)
}

func (s *Store) RunSteps(_ context.Context, id string) ([]store.StepRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.wf().steps[id])
	sort.Slice(out, func(i, j int) bool {
		if out[i].Seq != out[j].Seq {
			return out[i].Seq < out[j].Seq
		}
		return out[i].Attempt < out[j].Attempt
	})
	return out, nil
}

func (s *Store) RunEvents(_ context.Context, id string) ([]store.EventRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.wf().events[id])
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out, nil
}
