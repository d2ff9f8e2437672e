package engine

// Facts other parts of an instance report through inspect: the change
// feed's flavor, the schedule coordination, and free-form extras. They are
// given at New as providers and read each time inspect builds its
// document, so a part that starts after the engine (the feed, the
// scheduler) reports through them without calling back into the engine.

import "github.com/voltro/voltro/internal/observe"

// Facts provide what inspect reports about the instance's other parts. A
// nil provider, or one that returns "", reports "none" (no extras for
// Extra).
type Facts struct {
	// CDCFlavor is the change feed's transport.
	CDCFlavor func() string
	// ChangesLocal reports whether the change feed carries only this
	// instance's own writes (inline emit), which makes a full cluster's
	// tier "inline-only". nil: it does not.
	ChangesLocal func() bool
	// Coordination is the default schedule coordination.
	Coordination func() string
	// Extra are named free-form values (inspect's extra).
	Extra func() map[string]string
}

// Telemetry is the instance's tracer and instruments.
func (e *Engine) Telemetry() *observe.Telemetry { return e.tel }

// Tier is how far this instance clusters: "full" (shards move and changes
// cross instances), "inline-only" (shards move, but the change feed is
// inline emit: MySQL, CDC=0, or a fallback), "single-process" or "none"
// (a memory store). Boot log, inspect and cluster status say the same.
func (e *Engine) Tier() string {
	if e.tier == "full" && e.facts.ChangesLocal != nil && e.facts.ChangesLocal() {
		return "inline-only"
	}
	return e.tier
}

func (e *Engine) cdcFlavor() string { return orNone(e.facts.CDCFlavor) }

func (e *Engine) coordination() string { return orNone(e.facts.Coordination) }

func (e *Engine) extra() map[string]string {
	if e.facts.Extra == nil {
		return nil
	}
	return e.facts.Extra()
}

func orNone(f func() string) string {
	if f == nil {
		return "none"
	}
	if s := f(); s != "" {
		return s
	}
	return "none"
}
