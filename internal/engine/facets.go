package engine

// Facts other parts of an instance report through inspect: the change
// feed's flavor, the schedule coordination, and free-form extras.

import "github.com/voltro/voltro/internal/observe"

// Telemetry is the instance's tracer and instruments.
func (e *Engine) Telemetry() *observe.Telemetry { return e.tel }

// SetCDCFlavor records the change feed transport for inspect and status.
func (e *Engine) SetCDCFlavor(flavor string) {
	e.mu.Lock()
	e.cdc = flavor
	e.mu.Unlock()
}

// SetCoordination records the schedule coordination kind.
func (e *Engine) SetCoordination(kind string) {
	e.mu.Lock()
	e.coord = kind
	e.mu.Unlock()
}

// SetExtra adds a named value computed at inspect time.
func (e *Engine) SetExtra(name string, f func() string) {
	e.mu.Lock()
	if e.extra == nil {
		e.extra = map[string]func() string{}
	}
	e.extra[name] = f
	e.mu.Unlock()
}

func (e *Engine) cdcFlavor() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cdc == "" {
		return "none"
	}
	return e.cdc
}

func (e *Engine) coordination() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.coord == "" {
		return "none"
	}
	return e.coord
}
