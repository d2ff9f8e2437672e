// The Schedule a caller registers, and its validation.

package schedule

import (
	"context"
	"errors"
	"time"

	"github.com/voltro/voltro/internal/errs"
)

// Func is the work a schedule does. scheduledAt is the tick being fired (the
// same instant on every replica), not the moment the function started.
type Func func(ctx context.Context, scheduledAt time.Time) error

// Schedule is what a caller registers.
type Schedule struct {
	Name     string // unique per app; letters, digits and . _ - : /
	Spec     string // cron expression: 5 fields, optional leading seconds, or a descriptor
	TimeZone string // IANA zone the expression is read in; "" is UTC
	Func     Func

	Coordination Coordination // "" takes the app-wide default
	Overlap      Overlap      // "" is skip
	CatchUp      bool         // fire ticks missed while no replica was running, late
}

// maxNameLen keeps name@unixSecond inside the claim key column.
const maxNameLen = 200

// compiled is a validated Schedule.
type compiled struct {
	Schedule
	spec Spec
}

// compile validates s. A bad expression, zone, name or function is
// CodeInvalidArgument; an unknown coordination or overlap CodeInvalidConfig.
func compile(s Schedule) (compiled, error) {
	if err := checkName(s.Name); err != nil {
		return compiled{}, err
	}
	if s.Func == nil {
		return compiled{}, errs.New(errs.CodeInvalidArgument, "schedule %q has no function", s.Name)
	}
	spec, err := ParseSpec(s.Spec, s.TimeZone)
	if err != nil {
		return compiled{}, inSchedule(s.Name, errs.CodeInvalidArgument, err)
	}
	c, err := ParseCoordination(string(s.Coordination))
	if err != nil {
		return compiled{}, inSchedule(s.Name, errs.CodeInvalidConfig, err)
	}
	o, err := ParseOverlap(string(s.Overlap))
	if err != nil {
		return compiled{}, inSchedule(s.Name, errs.CodeInvalidConfig, err)
	}
	if o == OverlapDefault {
		o = OverlapSkip
	}
	s.Coordination, s.Overlap = c, o
	if s.TimeZone == "" {
		s.TimeZone = spec.Location().String()
	}
	return compiled{Schedule: s, spec: spec}, nil
}

func checkName(name string) error {
	if name == "" {
		return errs.New(errs.CodeInvalidArgument, "schedule name is empty")
	}
	if len(name) > maxNameLen {
		return errs.New(errs.CodeInvalidArgument, "schedule name %q is longer than %d bytes", name, maxNameLen)
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' || r == ':' || r == '/'
		if !ok {
			return errs.New(errs.CodeInvalidArgument, "schedule name %q has %q; use letters, digits and . _ - : /", name, r)
		}
	}
	return nil
}

// inSchedule prefixes a validation error with the schedule's name.
func inSchedule(name string, code errs.Code, err error) error {
	msg := err.Error()
	var e *errs.Error
	if errors.As(err, &e) && e.Err == nil {
		msg = e.Message
	}
	return errs.New(code, "schedule %q: %s", name, msg)
}
