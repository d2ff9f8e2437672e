// Cron expressions: parsing with clear errors, and the deterministic tick
// sequence every replica computes alike.

package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/voltro/voltro/internal/errs"
)

// Spec is a parsed cron expression bound to a time zone: a pure function from
// an instant to the next tick, the same on every replica.
type Spec struct {
	expr  string
	loc   *time.Location
	cron  *cronExpr     // five or six fields or a descriptor (cronexpr.go)
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
	c, err := parseCronExpr(body)
	if err != nil {
		return Spec{}, bad("%v", err)
	}
	s.cron = c
	return s, nil
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
	return s.cron.next(t, s.loc)
}

// String is the expression as given.
func (s Spec) String() string { return s.expr }

// Location is the zone the expression is read in.
func (s Spec) Location() *time.Location { return s.loc }
