package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
)

func TestRetentionSettings(t *testing.T) {
	c, err := FromEnv(env(nil), "")
	if err != nil {
		t.Fatal(err)
	}
	if c.Retention != 7*24*time.Hour || c.DeadLetterRetention != 30*24*time.Hour {
		t.Fatalf("defaults: %v %v", c.Retention, c.DeadLetterRetention)
	}
	day := 24 * time.Hour
	for v, want := range map[string]time.Duration{
		"0": 0, "0d": 0, "0s": 0, "7d": 7 * day, "1d12h": day + 12*time.Hour, "36h": 36 * time.Hour,
		"90m": 90 * time.Minute, "5s": 5 * time.Second, "5": 5 * time.Second, " 2d ": 2 * day, "3650d": 3650 * day,
	} {
		c, err := FromEnv(env(map[string]string{"VOLTRO_RETENTION": v, "VOLTRO_DEAD_LETTER_RETENTION": v}), "")
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		if c.Retention != want || c.DeadLetterRetention != want {
			t.Fatalf("%q: %v %v, want %v", v, c.Retention, c.DeadLetterRetention, want)
		}
	}
	for v, why := range map[string]string{
		"soon": "not a duration", "7days": "not a duration", "d": "not a duration", "-1": "out of range", "-1d": "not a duration",
		"500ms": "out of range", "3651d": "out of range", "99999999999999999999": "out of range", "99999999999999999999d": "out of range",
		"1d-1h": "out of range", "87600h1s": "out of range",
	} {
		for _, name := range []string{"VOLTRO_RETENTION", "VOLTRO_DEAD_LETTER_RETENTION"} {
			_, err := FromEnv(env(map[string]string{name: v}), "")
			if !errors.Is(err, errs.ErrInvalidConfig) {
				t.Fatalf("%s=%q: want invalid_config, got %v", name, v, err)
			}
			for _, w := range []string{name, `"` + v + `"`, why, "0 (keep everything)"} {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("%s=%q: message %q lacks %q", name, v, err, w)
				}
			}
		}
	}
	c, err = FromEnv(env(map[string]string{"VOLTRO_RETENTION": "5s"}), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "VOLTRO_RETENTION=5s") {
		t.Fatalf("a retention under a minute warns: %q", c.Warnings)
	}
	for d, want := range map[time.Duration]string{0: "forever", 7 * day: "7d", 36 * time.Hour: "1d12h", 5 * time.Second: "5s", 90 * time.Minute: "1h30m", day + 90*time.Second: "1d1m30s"} {
		if got := RetentionText(d); got != want {
			t.Fatalf("RetentionText(%v) = %q, want %q", d, got, want)
		}
	}
}
