package schedule

import (
	"errors"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
)

// "TZ= TZ=" used to panic inside robfig/cron, in Register and in `voltro
// schedules list` reading a stored definition.
func TestParseSpecDoubleTimeZoneDoesNotPanic(t *testing.T) {
	for _, expr := range []string{"TZ= TZ=", "TZ=UTC TZ=UTC", "CRON_TZ=UTC TZ=", "TZ= CRON_TZ=Europe/Paris 0 9 * * *", "TZ=\tTZ="} {
		_, err := ParseSpec(expr, "")
		if !errors.Is(err, errs.ErrInvalidArgument) {
			t.Errorf("ParseSpec(%q): %v, want invalid_argument", expr, err)
		}
	}
	// a stored definition like it: listing shows it, with no next tick
	views := Views([]Summary{{Name: "bad", Definition: &Definition{Name: "bad", Spec: "TZ= TZ="}},
		{Name: "good", Definition: &Definition{Name: "good", Spec: "@every 10s"}}}, time.Now())
	if len(views) != 2 || !views[0].NextFireAt.IsZero() || views[1].NextFireAt.IsZero() {
		t.Fatalf("views: %+v", views)
	}
}

// FuzzParseSpec: no cron expression or time zone makes ParseSpec or Next
// panic; an error is invalid_argument.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"* * * * *", "0 9 * * MON-FRI", "*/5 * * * * *", "@daily", "@every 10s", "TZ= TZ=",
		"CRON_TZ=Europe/Paris 0 9 * * *", "TZ=UTC", "0 0 30 2 *", "@every 9223372036s", "1-0/0 * * * *", "?", "TZ=\t* * * * *"} {
		f.Add(s, "")
	}
	f.Add("0 9 * * *", "Europe/Paris")
	f.Add("0 9 * * *", "Local")
	f.Fuzz(func(t *testing.T, expr, zone string) {
		s, err := ParseSpec(expr, zone)
		if err != nil {
			if !errors.Is(err, errs.ErrInvalidArgument) {
				t.Fatalf("ParseSpec(%q, %q): %v is not invalid_argument", expr, zone, err)
			}
			return
		}
		now := time.Unix(1_700_000_000, 0)
		if n := s.Next(now); !n.IsZero() && !n.After(now) {
			t.Fatalf("ParseSpec(%q, %q).Next(%v) = %v, not after", expr, zone, now, n)
		}
	})
}
