// Tests of expression parsing, validation messages and tick determinism.
package schedule

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
)

func TestRegisterRejectsBadInput(t *testing.T) {
	noop := func(context.Context, time.Time) error { return nil }
	cases := []struct {
		name string
		sch  Schedule
		code errs.Code
		want []string // every fragment must be in the message
	}{
		{"empty", Schedule{Name: "a", Spec: "", Func: noop}, errs.CodeInvalidArgument, []string{`"a"`, "empty"}},
		{"fields", Schedule{Name: "a", Spec: "* * *", Func: noop}, errs.CodeInvalidArgument, []string{`"* * *"`, "expected 5 to 6 fields, found 3"}},
		{"range", Schedule{Name: "a", Spec: "61 * * * *", Func: noop}, errs.CodeInvalidArgument, []string{`"61 * * * *"`, "above maximum (59)"}},
		{"seconds range", Schedule{Name: "a", Spec: "99 * * * * *", Func: noop}, errs.CodeInvalidArgument, []string{`"99 * * * * *"`, "above maximum (59)"}},
		{"word", Schedule{Name: "a", Spec: "0 0 * * funday", Func: noop}, errs.CodeInvalidArgument, []string{`"0 0 * * funday"`, "funday"}},
		{"descriptor", Schedule{Name: "a", Spec: "@fortnightly", Func: noop}, errs.CodeInvalidArgument, []string{`"@fortnightly"`, "unrecognized descriptor"}},
		{"every bad", Schedule{Name: "a", Spec: "@every soon", Func: noop}, errs.CodeInvalidArgument, []string{`"@every soon"`, "needs a duration"}},
		{"every short", Schedule{Name: "a", Spec: "@every 300ms", Func: noop}, errs.CodeInvalidArgument, []string{"shorter than one second"}},
		{"every fraction", Schedule{Name: "a", Spec: "@every 1500ms", Func: noop}, errs.CodeInvalidArgument, []string{"not a whole number of seconds"}},
		{"never", Schedule{Name: "a", Spec: "0 0 30 2 *", Func: noop}, errs.CodeInvalidArgument, []string{`"0 0 30 2 *"`, "matches no date"}},
		{"zone", Schedule{Name: "a", Spec: "0 9 * * *", TimeZone: "Mars/Olympus", Func: noop}, errs.CodeInvalidArgument, []string{`"0 9 * * *"`, `unknown time zone "Mars/Olympus"`}},
		{"local zone", Schedule{Name: "a", Spec: "0 9 * * *", TimeZone: "Local", Func: noop}, errs.CodeInvalidArgument, []string{"Local differs between machines"}},
		{"zone prefix alone", Schedule{Name: "a", Spec: "CRON_TZ=UTC", Func: noop}, errs.CodeInvalidArgument, []string{"needs an expression after it"}},
		{"two zones", Schedule{Name: "a", Spec: "CRON_TZ=Europe/Paris 0 9 * * *", TimeZone: "Asia/Tokyo", Func: noop}, errs.CodeInvalidArgument, []string{`"Europe/Paris"`, `"Asia/Tokyo"`}},
		{"no name", Schedule{Spec: "* * * * *", Func: noop}, errs.CodeInvalidArgument, []string{"name is empty"}},
		{"bad name", Schedule{Name: "a b", Spec: "* * * * *", Func: noop}, errs.CodeInvalidArgument, []string{`"a b"`, `' '`}},
		{"no func", Schedule{Name: "a", Spec: "* * * * *"}, errs.CodeInvalidArgument, []string{"no function"}},
		{"coordination", Schedule{Name: "a", Spec: "* * * * *", Func: noop, Coordination: "leader"}, errs.CodeInvalidConfig, []string{`"leader"`, "single, advisoryLock, cluster"}},
		{"overlap", Schedule{Name: "a", Spec: "* * * * *", Func: noop, Overlap: "drop"}, errs.CodeInvalidConfig, []string{`"drop"`, "skip, queue, parallel"}},
	}
	s := newTestScheduler(t, Config{ReplicaID: "r", Store: NewMemoryStore()})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := s.Register(c.sch)
			if err == nil {
				t.Fatalf("Register(%+v) succeeded", c.sch)
			}
			if !errors.Is(err, &errs.Error{Code: c.code}) {
				t.Errorf("code: got %v, want %s", err, c.code)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message %q lacks %q", err.Error(), w)
				}
			}
			t.Log(err)
		})
	}
}

func TestBadConfigValuesFailBoot(t *testing.T) {
	_, err := New(Config{ReplicaID: "r", Store: NewMemoryStore(), Default: "quorum"})
	if !errors.Is(err, errs.ErrInvalidConfig) || !strings.Contains(err.Error(), `"quorum"`) {
		t.Fatalf("New with Default quorum: %v", err)
	}
	// VOLTRO_SCHEDULE_COORDINATION itself is read and checked by
	// internal/config (TestScheduleCoordinationVariable).
	if _, err := New(Config{Store: NewMemoryStore()}); !errors.Is(err, errs.ErrInvalidConfig) {
		t.Fatalf("no replica id: %v", err)
	}
	s := newTestScheduler(t, Config{ReplicaID: "r", Store: NewMemoryStore()})
	ok := Schedule{Name: "a", Spec: "@every 1s", Func: func(context.Context, time.Time) error { return nil }}
	if err := s.Register(ok); err != nil {
		t.Fatal(err)
	}
	if err := s.Register(ok); !errors.Is(err, errs.ErrAlreadyExists) {
		t.Fatalf("second registration: %v", err)
	}
}

func TestTicksAreTheSameWhateverTheReadingTime(t *testing.T) {
	for _, expr := range []string{"* * * * * *", "*/5 * * * * *", "@every 7s", "0 */2 * * *", "@hourly"} {
		spec, err := ParseSpec(expr, "")
		if err != nil {
			t.Fatal(err)
		}
		base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		want := []time.Time{spec.Next(base)}
		for len(want) < 5 {
			want = append(want, spec.Next(want[len(want)-1]))
		}
		// Readings anywhere inside an interval, with any sub-second part and
		// any location, give the same next tick.
		for i := 1; i < len(want); i++ {
			prev := want[i-1]
			for _, off := range []time.Duration{1, 123 * time.Millisecond, 700 * time.Millisecond, want[i].Sub(prev) - 1} {
				reading := prev.Add(off).In(time.FixedZone("x", 5*3600+1800))
				if got := spec.Next(reading); !got.Equal(want[i]) {
					t.Fatalf("%s: Next(%v) = %v, want %v", expr, reading, got, want[i])
				}
			}
			if want[i].Nanosecond() != 0 {
				t.Fatalf("%s: tick %v is not on a second", expr, want[i])
			}
		}
	}
}

func TestEveryIsAlignedToTheEpoch(t *testing.T) {
	spec, err := ParseSpec("@every 7s", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Time{time.Unix(1_800_000_003, 5), time.Unix(12, 0), time.Unix(-5, 0)} {
		n := spec.Next(at)
		if n.Unix()%7 != 0 || !n.After(at) || n.Sub(at) > 7*time.Second {
			t.Fatalf("Next(%v) = %v", at, n)
		}
	}
}

func TestTimeZones(t *testing.T) {
	paris, err := ParseSpec("0 9 * * *", "Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	// 09:00 in Paris is 08:00 UTC in winter and 07:00 UTC in summer.
	if got := paris.Next(time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)); got != time.Date(2026, 1, 10, 8, 0, 0, 0, time.UTC) {
		t.Fatalf("winter: %v", got)
	}
	if got := paris.Next(time.Date(2026, 7, 10, 0, 0, 0, 0, time.UTC)); got != time.Date(2026, 7, 10, 7, 0, 0, 0, time.UTC) {
		t.Fatalf("summer: %v", got)
	}
	prefixed, err := ParseSpec("CRON_TZ=Europe/Paris 0 9 * * *", "")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	if prefixed.Next(at) != paris.Next(at) || prefixed.Location().String() != "Europe/Paris" {
		t.Fatalf("CRON_TZ prefix: %v", prefixed.Next(at))
	}
	utc, _ := ParseSpec("0 9 * * *", "")
	if got := utc.Next(at); got != time.Date(2026, 1, 10, 9, 0, 0, 0, time.UTC) {
		t.Fatalf("default zone is not UTC: %v", got)
	}
}
