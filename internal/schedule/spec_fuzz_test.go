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
// panic; an error is invalid_argument. Of an accepted spec, successive Next
// calls from any start (years 1 to 9999) strictly increase, land on whole
// seconds, do not depend on the start's location, and Next of one second
// before a tick is that tick.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"* * * * *", "0 9 * * MON-FRI", "*/5 * * * * *", "@daily", "@every 10s", "TZ= TZ=",
		"CRON_TZ=Europe/Paris 0 9 * * *", "TZ=UTC", "0 0 30 2 *", "@every 9223372036s", "1-0/0 * * * *", "?", "TZ=\t* * * * *",
		"0 0 29 2 *", "0 0 13 * FRI", "5/10 1-10/2,*/7 * JAN-mar/2 sun-SAT", "0 0 1 1 ,", "*-5 * * * *", "1,,2 +5 * * *",
		"0 30 2 * * *", "*/56 3 * * *", "@hourly", "@weekly"} {
		f.Add(s, "", int64(1_700_000_000), int64(0))
	}
	for _, z := range []string{"Europe/Paris", "Local", "America/New_York", "Europe/London", "Australia/Lord_Howe", "Pacific/Apia", "America/Sao_Paulo"} {
		f.Add("30 1 * * *", z, int64(1_793_512_800), int64(500)) // 2026-11-01T06:00:00Z, fall back in New York
		f.Add("*/20 2 * * *", z, int64(1_772_949_600), int64(0)) // 2026-03-08T06:00:00Z, spring forward in New York
	}
	f.Add("0 9 * * *", "Pacific/Apia", int64(1_325_152_800), int64(0))   // 2011-12-29T10:00:00Z, Samoa skips a day
	f.Add("0 0 29 2 *", "Europe/London", int64(4_096_656_000), int64(0)) // 2099-10-26
	f.Fuzz(func(t *testing.T, expr, zone string, start, nanos int64) {
		s, err := ParseSpec(expr, zone)
		if err != nil {
			if !errors.Is(err, errs.ErrInvalidArgument) {
				t.Fatalf("ParseSpec(%q, %q): %v is not invalid_argument", expr, zone, err)
			}
			return
		}
		lo, hi := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Unix()
		if start < lo || start > hi {
			start = lo + (start%(hi-lo)+(hi-lo))%(hi-lo)
		}
		prev := time.Unix(start, (nanos%1e9+1e9)%1e9)
		elsewhere := time.FixedZone("elsewhere", -(9*3600 + 30*60))
		for range 6 {
			n := s.Next(prev)
			if n.IsZero() {
				return
			}
			if !n.After(prev) || n.Nanosecond() != 0 {
				t.Fatalf("ParseSpec(%q, %q).Next(%v) = %v, not a whole second after", expr, zone, prev, n)
			}
			if o := s.Next(prev.In(elsewhere)); !o.Equal(n) {
				t.Fatalf("ParseSpec(%q, %q).Next(%v) = %v, but %v from the same instant elsewhere", expr, zone, prev, n, o)
			}
			if b := s.Next(n.Add(-time.Second)); !b.Equal(n) {
				t.Fatalf("ParseSpec(%q, %q): Next(%v) = %v, but Next(%v) = %v", expr, zone, prev, n, n.Add(-time.Second), b)
			}
			prev = n
		}
	})
}
