package config

// The registry directory and the process name, resolved from the
// environment (moved here from internal/registry with the reads).

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/voltro/voltro/internal/registry"
)

func TestRegistryDir(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{registry.EnvDir: "/x/reg", "XDG_RUNTIME_DIR": "/run/user/1", "HOME": "/home/a"}, "/x/reg"},
		{map[string]string{"XDG_RUNTIME_DIR": "/run/user/1", "HOME": "/home/a"}, "/run/user/1/voltro"},
		{map[string]string{"HOME": "/home/a"}, "/home/a/.voltro/run"},
	}
	for _, c := range cases {
		got, err := RegistryDir(env(c.env))
		if err != nil || got != c.want {
			t.Errorf("RegistryDir(%v) = %q, %v; want %q", c.env, got, err, c.want)
		}
	}
}

func TestProcessName(t *testing.T) {
	c, err := FromEnv(env(map[string]string{registry.EnvProcess: " billing "}), "")
	if err != nil || c.ProcessName != "billing" {
		t.Fatalf("override: %q (%v)", c.ProcessName, err)
	}
	exe, _ := os.Executable()
	if c, _ := FromEnv(env(nil), ""); c.ProcessName != filepath.Base(exe) {
		t.Fatalf("default %q, want the executable's base name %q", c.ProcessName, filepath.Base(exe))
	}
}
