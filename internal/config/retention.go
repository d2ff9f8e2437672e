package config

// Retention settings: how long finished runs, processed messages and dead
// letters are kept (docs/retention.md). They take days as well as Go
// durations ("7d", "36h", "1d12h"); 0 keeps everything.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/voltro/voltro/internal/errs"
)

// Retention defaults and bounds.
const (
	DefaultRetention           = 7 * 24 * time.Hour
	DefaultDeadLetterRetention = 30 * 24 * time.Hour
	MinRetention               = time.Second
	MaxRetention               = 3650 * 24 * time.Hour
	// ShortRetention: below it, a cluster schedule's new owner, which looks
	// a minute back for the ticks its predecessor started, may no longer
	// find a finished tick's run and start it again.
	ShortRetention = time.Minute
)

// retention checks VOLTRO_RETENTION and VOLTRO_DEAD_LETTER_RETENTION.
func (c *Config) retention(s Settings) error {
	var err error
	if c.Retention, err = retentionDuration(s, envRetention, s.Retention, DefaultRetention); err != nil {
		return err
	}
	if c.DeadLetterRetention, err = retentionDuration(s, envDeadLetterRetention, s.DeadLetterRetention, DefaultDeadLetterRetention); err != nil {
		return err
	}
	if c.Retention > 0 && c.Retention < ShortRetention {
		c.Warnings = append(c.Warnings, fmt.Sprintf("VOLTRO_RETENTION=%s is under %s: a finished run is deleted before a cluster schedule's new owner stops looking for it, so that owner may run a tick again; keep it at %s or more outside tests", c.Retention, ShortRetention, ShortRetention))
	}
	return nil
}

// retentionDuration checks one retention setting: unset is def, negative
// keeps everything (0), otherwise at least MinRetention and at most
// MaxRetention.
func retentionDuration(s Settings, name string, d, def time.Duration) (time.Duration, error) {
	if err := s.failed(name); err != nil {
		return 0, err
	}
	switch {
	case d < 0:
		return 0, nil
	case d == 0:
		return def, nil
	case d < MinRetention || d > MaxRetention:
		return 0, badRetention(name, s.shown(name, d.String()), errOutOfRange)
	}
	return d, nil
}

func badRetention(name, text string, err error) error {
	return errs.New(errs.CodeInvalidConfig, "%s=%q %v: use 0 (keep everything) or a duration from %v to %d days, e.g. 7d, 36h or 1d12h", name, text, err, MinRetention, int(MaxRetention/(24*time.Hour)))
}

var (
	errNotRetention = errors.New("is not a duration")
	errOutOfRange   = errors.New("is out of range")
)

func parseRetention(s string) (time.Duration, error) {
	const day = 24 * time.Hour
	var d time.Duration
	if n, err := strconv.ParseInt(s, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		// plain integers are seconds
		if err != nil || n < 0 || n > int64(MaxRetention/time.Second) {
			return 0, errOutOfRange
		}
		d = time.Duration(n) * time.Second
	} else {
		rest := s
		if head, tail, ok := strings.Cut(s, "d"); ok {
			n, err := strconv.ParseUint(head, 10, 63)
			switch {
			case errors.Is(err, strconv.ErrRange), err == nil && n > uint64(MaxRetention/day):
				return 0, errOutOfRange
			case err != nil:
				return 0, errNotRetention
			}
			d, rest = time.Duration(n)*day, tail
		}
		if rest != "" {
			r, err := time.ParseDuration(rest)
			switch {
			case err != nil:
				return 0, errNotRetention
			case r < 0 || r > MaxRetention:
				return 0, errOutOfRange
			}
			d += r
		}
	}
	if d != 0 && (d < MinRetention || d > MaxRetention) {
		return 0, errOutOfRange
	}
	return d, nil
}

// RetentionText is d as the docs write it: "7d", "1d12h", "5s"; "forever"
// for 0.
func RetentionText(d time.Duration) string {
	const day = 24 * time.Hour
	if d <= 0 {
		return "forever"
	}
	out := ""
	if d >= day {
		out, d = strconv.FormatInt(int64(d/day), 10)+"d", d%day
		if d == 0 {
			return out
		}
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return out + s
}
