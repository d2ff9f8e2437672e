// Cron expressions: parsing with clear errors, and the deterministic tick
// sequence every replica computes alike.
package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/voltro/voltro/internal/errs"
)

// parser accepts five fields, an optional leading seconds field, and the
// descriptors (@hourly, @daily, @every 10s, …).
var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Spec is a parsed cron expression bound to a time zone: a pure function from
// an instant to the next tick, the same on every replica.
type Spec struct {
	expr  string
	loc   *time.Location
	cron  cron.Schedule
	every time.Duration // > 0 for "@every D"
}

// ParseSpec parses expr in timeZone ("" means UTC). The expression may start
// with CRON_TZ=Zone instead. Errors carry CodeInvalidArgument and name the
// expression and what is wrong with it.
func ParseSpec(expr, timeZone string) (Spec, error) {
	expr = strings.TrimSpace(expr)
	bad := func(format string, args ...any) error {
		return errs.New(errs.CodeInvalidArgument, "invalid cron expression %q: "+format, append([]any{expr}, args...)...)
	}
	if expr == "" {
		return Spec{}, bad("it is empty")
	}
	body := expr
	if strings.HasPrefix(body, "TZ=") || strings.HasPrefix(body, "CRON_TZ=") {
		i := strings.IndexAny(body, " \t")
		if i < 0 {
			return Spec{}, bad("a time zone prefix needs an expression after it")
		}
		zone := body[strings.IndexByte(body, '=')+1 : i]
		if timeZone != "" && timeZone != zone {
			return Spec{}, bad("it names time zone %q but the schedule's TimeZone is %q", zone, timeZone)
		}
		timeZone, body = zone, strings.TrimSpace(body[i:])
		if strings.HasPrefix(body, "TZ=") || strings.HasPrefix(body, "CRON_TZ=") {
			// robfig/cron would slice past the end of "TZ=" and panic
			return Spec{}, bad("it has more than one time zone prefix")
		}
	}
	loc, err := loadZone(timeZone)
	if err != nil {
		return Spec{}, bad("%v", err)
	}
	s := Spec{expr: expr, loc: loc}
	if rest, ok := strings.CutPrefix(body, "@every"); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		switch {
		case err != nil:
			return Spec{}, bad("@every needs a duration such as 10s or 5m (%v)", err)
		case d < time.Second:
			return Spec{}, bad("@every %s is shorter than one second", d)
		case d%time.Second != 0:
			return Spec{}, bad("@every %s is not a whole number of seconds", d)
		}
		s.every = d
		return s, nil
	}
	sched, err := parseCron(body)
	if err != nil {
		return Spec{}, bad("%v", err)
	}
	if ss, ok := sched.(*cron.SpecSchedule); ok {
		ss.Location = loc // never time.Local: replicas may live in different zones
	}
	s.cron = sched
	if next, ok := s.safeNext(time.Now()); !ok {
		return Spec{}, bad("the cron library cannot compute its next tick")
	} else if next.IsZero() {
		return Spec{}, bad("it matches no date in the next five years")
	}
	return s, nil
}

// parseCron is parser.Parse that cannot panic: robfig/cron is unmaintained
// and has panicked on odd input ("TZ="), and a stored spec is parsed by
// every replica and by the CLI, so a panic there would take them all down.
func parseCron(body string) (sched cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			sched, err = nil, fmt.Errorf("the cron parser cannot read it (%v)", r)
		}
	}()
	return parser.Parse(body)
}

// loadZone resolves a zone name; "" is UTC. Local is refused because it
// differs from machine to machine.
func loadZone(name string) (*time.Location, error) {
	switch name {
	case "", "UTC":
		return time.UTC, nil
	case "Local":
		return nil, errors.New("time zone Local differs between machines; name a zone such as Europe/Paris")
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q", name)
	}
	return loc, nil
}

// Next returns the first tick strictly after t, in UTC. For @every D the
// ticks are the multiples of D since the Unix epoch, so all replicas agree
// whenever they started. The zero time means there is none.
func (s Spec) Next(t time.Time) time.Time {
	if s.every > 0 {
		step := int64(s.every / time.Second)
		n := t.Unix() / step
		if t.Unix()%step < 0 {
			n--
		}
		return time.Unix((n+1)*step, 0).UTC()
	}
	if s.cron == nil {
		return time.Time{}
	}
	return s.cron.Next(t.In(s.loc)).UTC()
}

// safeNext is Next that reports a panic of the cron library as !ok.
func (s Spec) safeNext(t time.Time) (next time.Time, ok bool) {
	defer func() {
		if recover() != nil {
			next, ok = time.Time{}, false
		}
	}()
	return s.Next(t), true
}

// String is the expression as given.
func (s Spec) String() string { return s.expr }

// Location is the zone the expression is read in.
func (s Spec) Location() *time.Location { return s.loc }
