package engine

// Retention on this instance: the background sweeper (internal/retention)
// runs in every engine and sweeps only while the engine holds the
// retention shard, so one instance of a cluster sweeps at a time and the
// job fails over with the shard. On a store that never clusters (memory,
// SQLite) the one process holds it.

import (
	"fmt"
	"time"

	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/retention"
	"github.com/voltro/voltro/internal/store"
)

// RetentionEntity is the entity id whose shard, in the first group, the
// sweeping instance holds.
const RetentionEntity = "voltro/retention"

// RetentionPolicy is the retention cfg sets.
func RetentionPolicy(cfg config.Config) retention.Policy {
	return retention.Policy{Runs: cfg.Retention, DeadLetters: cfg.DeadLetterRetention, Runners: retention.RunnerAge(cfg.Heartbeat)}
}

// RetentionShard is the shard whose holder sweeps.
func (e *Engine) RetentionShard() string { return e.ShardOf("", RetentionEntity, e.cfg.Groups[0]) }

// Retention is the background sweeper; nil when the store cannot sweep.
func (e *Engine) Retention() *retention.Sweeper { return e.sweeper }

// RetentionSweeping reports whether this instance holds the retention
// shard now: it is the one that sweeps.
func (e *Engine) RetentionSweeping() bool { return e.runner.Epoch(e.RetentionShard()) > 0 }

// newSweeper builds the sweeper of d, if d sweeps.
func (e *Engine) newSweeper(d store.Driver) *retention.Sweeper {
	rs, ok := d.(retention.Store)
	if !ok {
		e.log.Warn("retention: this store cannot delete old rows; tables grow without bound", "dialect", d.Dialect())
		return nil
	}
	return retention.New(retention.Options{
		Store: rs, Policy: RetentionPolicy(e.cfg), Logger: e.log, Holds: e.RetentionSweeping,
	})
}

// logRetention states the retention in force at boot.
func (e *Engine) logRetention() {
	if e.sweeper == nil {
		return
	}
	p := e.sweeper.Policy()
	e.log.Info(fmt.Sprintf("retention: finished runs and processed messages %s, dead letters %s; swept by the holder of shard %s",
		config.RetentionText(p.Runs), config.RetentionText(p.DeadLetters), e.RetentionShard()),
		"runs", p.Runs, "dead_letters", p.DeadLetters)
}

// RetentionDoc is the retention part of the inspect document.
type RetentionDoc struct {
	// Runs and DeadLetters are the retention in force, as configured
	// ("7d"; "forever" for 0), and in seconds (0: off).
	Runs               string  `json:"runs"`
	DeadLetters        string  `json:"deadLetters"`
	RunsSeconds        float64 `json:"runsSeconds"`
	DeadLettersSeconds float64 `json:"deadLettersSeconds"`
	// RunnersSeconds: how long a silent runner's row is kept.
	RunnersSeconds float64 `json:"runnersSeconds"`
	// Shard is the retention shard; Sweeping says this instance holds it
	// (it is the one that sweeps).
	Shard    string `json:"shard"`
	Sweeping bool   `json:"sweeping"`
	Passes   int64  `json:"passes"`
	// LastPassAt (and how long ago it was), LastPassSeconds and
	// LastPassRows describe this instance's last pass; null, 0, 0 before
	// one.
	LastPassAt         *time.Time `json:"lastPassAt"`
	LastPassAgeSeconds *float64   `json:"lastPassAgeSeconds"`
	LastPassSeconds    float64    `json:"lastPassSeconds"`
	LastPassRows       int64      `json:"lastPassRows"`
	LastError          string     `json:"lastError,omitempty"`
	// Deleted counts rows this instance deleted since it started, by table.
	Deleted map[string]int64 `json:"deleted"`
	// OldestSeconds is the age of the oldest row kept after the last pass,
	// by kind (runs, processed, dead); absent when none is kept.
	OldestSeconds map[string]float64 `json:"oldestSeconds"`
}

func (e *Engine) retentionDoc() *RetentionDoc {
	if e.sweeper == nil {
		return nil
	}
	st := e.sweeper.Stats()
	p := st.Policy
	doc := &RetentionDoc{
		Runs: config.RetentionText(p.Runs), DeadLetters: config.RetentionText(p.DeadLetters),
		RunsSeconds: p.Runs.Seconds(), DeadLettersSeconds: p.DeadLetters.Seconds(), RunnersSeconds: p.Runners.Seconds(),
		Shard: e.RetentionShard(), Sweeping: e.RetentionSweeping(), Passes: st.Passes,
		LastPassSeconds: st.LastPassDuration.Seconds(), LastPassRows: st.LastPassRows, LastError: st.LastError,
		Deleted: st.Deleted, OldestSeconds: map[string]float64{},
	}
	if !st.LastPass.IsZero() {
		at := st.LastPass.UTC()
		doc.LastPassAt = &at
		age := time.Since(st.LastPass).Seconds()
		doc.LastPassAgeSeconds = &age
	}
	for k, age := range st.OldestAges(time.Now()) {
		doc.OldestSeconds[string(k)] = age.Seconds()
	}
	return doc
}
