// What `voltro demo` needs for its demo.tick schedule (its period is
// config.DemoTick's).

package schedule

import (
	"context"
	"log/slog"
	"time"
)

const (
	// DemoTickName is the demo's schedule.
	DemoTickName = "demo.tick"
)

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
