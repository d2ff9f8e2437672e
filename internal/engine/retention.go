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
	"github.com/voltro/voltro/internal/inspect"
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

func (e *Engine) retentionDoc() *inspect.RetentionDoc {
	if e.sweeper == nil {
		return nil
	}
	st := e.sweeper.Stats()
	p := st.Policy
	doc := &inspect.RetentionDoc{
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
