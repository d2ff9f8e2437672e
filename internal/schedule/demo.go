// What `voltro demo` needs for its demo.tick schedule: the period from the
// --tick flag or VOLTRO_DEMO_TICK, and the schedule itself.

package schedule

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/voltro/voltro/internal/errs"
)

const (
	// DemoTickName is the demo's schedule.
	DemoTickName = "demo.tick"
	// EnvDemoTick sets the demo tick period when --tick is not given.
	EnvDemoTick = "VOLTRO_DEMO_TICK"
	// DefaultDemoTick is the period when neither is given.
	DefaultDemoTick = 5 * time.Second
)

// DemoTickEvery resolves the demo tick period: the --tick flag value if not
// empty, else VOLTRO_DEMO_TICK, else 5s. A value that is not a whole number
// of seconds of at least 1s fails with CodeInvalidConfig.
func DemoTickEvery(flagValue string, env func(string) string) (time.Duration, error) {
	src, raw := "--tick", strings.TrimSpace(flagValue)
	if raw == "" {
		src, raw = EnvDemoTick, strings.TrimSpace(env(EnvDemoTick))
	}
	if raw == "" {
		return DefaultDemoTick, nil
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d < time.Second || d%time.Second != 0 {
		return 0, errs.New(errs.CodeInvalidConfig, "%s=%q: want a whole number of seconds, at least 1s (e.g. 5s, 1m)", src, raw)
	}
	return d, nil
}

// DemoTick is the demo.tick schedule: every period, it logs the tick it
// fired. Coordination is the app's default, so several demo instances on
// one database show one firing per tick between them.
func DemoTick(every time.Duration, log *slog.Logger) Schedule {
	return Schedule{
		Name: DemoTickName,
		Spec: "@every " + every.String(),
		Func: func(ctx context.Context, at time.Time) error {
			log.InfoContext(ctx, "demo.tick", "scheduledAt", at, "late", time.Since(at).Round(time.Millisecond))
			return nil
		},
	}
}
