// The demo tick's period resolution and schedule.
package schedule

import (
	"errors"
	"log/slog"
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
		got, err := DemoTickEvery(c.flag, env(c.env))
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
	st := NewMemoryStore()
	logs := &syncBuffer{}
	s := newTestScheduler(t, Config{ReplicaID: "demo", Store: st})
	if err := s.Register(DemoTick(time.Second, slog.New(slog.NewTextHandler(logs, nil)))); err != nil {
		t.Fatal(err)
	}
	stop := runScheduler(t, s)
	time.Sleep(1300 * time.Millisecond)
	stop()
	if rs := runsOf(t, st, DemoTickName); len(rs) == 0 || rs[0].Status != StatusSucceeded || !strings.Contains(logs.String(), "demo.tick") {
		t.Fatalf("demo tick did not fire: %+v\n%s", rs, logs)
	}
}
