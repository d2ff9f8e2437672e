package config

// The demo tick's period: the --tick flag, else VOLTRO_DEMO_TICK, else 5s.

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
)

func TestDemoTick(t *testing.T) {
	t.Parallel()
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == EnvDemoTick {
				return v
			}
			return ""
		}
	}
	for _, c := range []struct {
		flag, env string
		want      time.Duration
		bad       string
	}{
		{"", "", DefaultDemoTick, ""},
		{"", "2s", 2 * time.Second, ""},
		{"1m", "2s", time.Minute, ""},
		{"500ms", "", 0, "--tick"},
		{"", "soon", 0, EnvDemoTick},
		{"1500ms", "", 0, "whole number"},
	} {
		got, err := DemoTick(c.flag, env(c.env))
		if c.bad != "" {
			if !errors.Is(err, errs.ErrInvalidConfig) || !strings.Contains(err.Error(), c.bad) {
				t.Errorf("flag %q env %q: %v", c.flag, c.env, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("flag %q env %q: %v %v", c.flag, c.env, got, err)
		}
	}
}

// VOLTRO_SCHEDULE_COORDINATION: an unknown value fails naming the variable
// and the value; a known one is read case-insensitively.
func TestScheduleCoordinationVariable(t *testing.T) {
	_, err := FromEnv(env(map[string]string{envScheduleCoordination: "lease"}), "")
	if !errors.Is(err, errs.ErrInvalidConfig) || !strings.Contains(err.Error(), envScheduleCoordination) || !strings.Contains(err.Error(), `"lease"`) {
		t.Fatalf("env lease: %v", err)
	}
	c, err := FromEnv(env(map[string]string{envScheduleCoordination: "AdvisoryLock"}), "")
	if err != nil || c.ScheduleCoordination != "advisoryLock" {
		t.Fatalf("env AdvisoryLock: %v %v", c.ScheduleCoordination, err)
	}
}
