// The in-process Store: the dev default, and what single-process apps use.
package schedule

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// MemoryStore keeps claims and runs in maps. Several Schedulers in one
// process may share one, which is how coordination is tested in-process.
type MemoryStore struct {
	now func() time.Time

	mu     sync.Mutex
	claims map[string]claimRow
	runs   []memRun
	defs   map[string]Definition
	nextID int64
}

type claimRow struct {
	Claim
	claimedAt time.Time
}

type memRun struct {
	Run
	heartbeat time.Time
}

// NewMemoryStore returns an empty store stamping times with time.Now.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{now: time.Now, claims: map[string]claimRow{}, defs: map[string]Definition{}}
}

func (m *MemoryStore) Dialect() store.Dialect         { return store.Memory }
func (m *MemoryStore) Init(ctx context.Context) error { return nil }

func (m *MemoryStore) Claim(ctx context.Context, c Claim) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, taken := m.claims[c.Key()]; taken {
		return false, nil
	}
	m.claims[c.Key()] = claimRow{Claim: c, claimedAt: m.now()}
	return true, nil
}

func (m *MemoryStore) Define(ctx context.Context, d Definition) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d.UpdatedAt = m.now()
	m.defs[d.Name] = d
	return nil
}

func (m *MemoryStore) Insert(ctx context.Context, r Run) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.nextID++
	r.ID = m.nextID
	if r.Status != StatusQueued {
		r.Started = now
	}
	if !r.Status.Live() {
		r.Finished = now
	}
	m.runs = append(m.runs, memRun{Run: r, heartbeat: now})
	return r.ID, nil
}

func (m *MemoryStore) find(id int64) (*memRun, error) {
	for i := range m.runs {
		if m.runs[i].ID == id {
			return &m.runs[i], nil
		}
	}
	return nil, errs.New(errs.CodeNotFound, "schedule run %d not found", id)
}

func (m *MemoryStore) Start(ctx context.Context, id int64) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.find(id)
	if err != nil || r.Status != StatusQueued {
		return false, err
	}
	r.Status, r.Started, r.heartbeat = StatusRunning, m.now(), m.now()
	return true, nil
}

func (m *MemoryStore) Finish(ctx context.Context, id int64, status Status, errText string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.find(id)
	if err != nil {
		return err
	}
	r.Status, r.Finished, r.Error = status, m.now(), errText
	return nil
}

func (m *MemoryStore) Heartbeat(ctx context.Context, replicaID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.runs {
		if r := &m.runs[i]; r.ReplicaID == replicaID && r.Status.Live() {
			r.heartbeat = m.now()
		}
	}
	return nil
}

func (m *MemoryStore) Active(ctx context.Context, schedule string, stale time.Duration) (Activity, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var a Activity
	cutoff := m.now().Add(-stale)
	for _, r := range m.runs {
		if r.Schedule != schedule || !r.heartbeat.After(cutoff) {
			continue
		}
		switch r.Status {
		case StatusRunning:
			a.Running++
		case StatusQueued:
			a.Queued++
		}
	}
	return a, nil
}

func (m *MemoryStore) LastScheduledAt(ctx context.Context, schedule string, notAfter time.Time) (time.Time, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var last time.Time
	for _, r := range m.runs {
		if r.Schedule == schedule && !r.ScheduledAt.After(notAfter) && r.ScheduledAt.After(last) {
			last = r.ScheduledAt
		}
	}
	return last, !last.IsZero(), nil
}

func (m *MemoryStore) Runs(ctx context.Context, schedule string, limit int) ([]Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Run
	for _, r := range m.runs {
		if r.Schedule == schedule {
			out = append(out, r.Run)
		}
	}
	sortRuns(out)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// sortRuns orders runs newest tick first, then newest row first.
func sortRuns(rs []Run) {
	slices.SortFunc(rs, func(a, b Run) int {
		if c := b.ScheduledAt.Compare(a.ScheduledAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
}

func (m *MemoryStore) Summaries(ctx context.Context) ([]Summary, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	byName := map[string]*Summary{}
	get := func(name string) *Summary {
		s, ok := byName[name]
		if !ok {
			s = &Summary{Name: name, Counts: map[Outcome]int64{}}
			byName[name] = s
		}
		return s
	}
	for name, d := range m.defs {
		get(name).Definition = &d
	}
	for _, r := range m.runs {
		s := get(r.Schedule)
		s.Counts[r.Outcome]++
		if r.Outcome != OutcomeLostLock && (s.Last == nil || laterRun(r.Run, *s.Last)) {
			last := r.Run
			s.Last = &last
		}
	}
	return sortedSummaries(byName), nil
}

func laterRun(a, b Run) bool {
	if c := a.ScheduledAt.Compare(b.ScheduledAt); c != 0 {
		return c > 0
	}
	return a.ID > b.ID
}

func sortedSummaries(byName map[string]*Summary) []Summary {
	out := make([]Summary, 0, len(byName))
	for _, s := range byName {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b Summary) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

func (m *MemoryStore) GC(ctx context.Context, r Retention) (GCResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var res GCResult
	now := m.now()
	for k, c := range m.claims {
		if c.claimedAt.Before(now.Add(-r.Claims)) {
			delete(m.claims, k)
			res.Claims++
		}
	}
	kept := m.runs[:0]
	for _, run := range m.runs {
		if run.Status.Live() && run.heartbeat.Before(now.Add(-r.Stale)) {
			run.Status, run.Finished, run.Error = StatusAbandoned, now, abandonedError
			res.Abandoned++
		}
		if !run.Status.Live() && run.Finished.Before(now.Add(-r.Runs)) {
			res.Runs++
			continue
		}
		kept = append(kept, run)
	}
	m.runs = kept
	return res, nil
}

// abandonedError is the error text of a run whose replica went silent.
const abandonedError = "its replica stopped heart-beating"
