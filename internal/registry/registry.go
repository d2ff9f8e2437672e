package registry

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/voltro/voltro/internal/errs"
)

// Environment variables the registry reads.
const (
	EnvDir     = "VOLTRO_REGISTRY_DIR"
	EnvProcess = "VOLTRO_PROCESS_NAME"
)

// Entry is one instance's registry file.
type Entry struct {
	ReplicaID     string    `json:"replicaId"`
	PID           int       `json:"pid"`
	Process       string    `json:"process"`
	Host          string    `json:"host"`
	Dialect       string    `json:"dialect"`
	Database      string    `json:"database"` // database name; absolute file path for SQLite
	InspectAddr   string    `json:"inspectAddress"`
	RunnerAddress string    `json:"runnerAddress"`
	Started       time.Time `json:"started"`
}

// Dir is the registry directory: VOLTRO_REGISTRY_DIR, else
// $XDG_RUNTIME_DIR/voltro, else ~/.voltro/run.
func Dir(env func(string) string) (string, error) {
	if d := strings.TrimSpace(env(EnvDir)); d != "" {
		return d, nil
	}
	if d := strings.TrimSpace(env("XDG_RUNTIME_DIR")); d != "" {
		return filepath.Join(d, "voltro"), nil
	}
	home := strings.TrimSpace(env("HOME"))
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", errs.Wrap(errs.CodeInvalidConfig, err, "registry: no home directory; set "+EnvDir)
		}
	}
	return filepath.Join(home, ".voltro", "run"), nil
}

// ProcessName is VOLTRO_PROCESS_NAME, else the executable's base name.
func ProcessName(env func(string) string) string {
	if p := strings.TrimSpace(env(EnvProcess)); p != "" {
		return p
	}
	exe, err := os.Executable()
	if err != nil || exe == "" {
		exe = os.Args[0]
	}
	return strings.TrimSuffix(filepath.Base(exe), ".exe")
}

// DatabaseKey is how an entry names its database, so that an operator's
// DB_URL and an instance's compare equal: SQLite paths are made absolute.
func DatabaseKey(dialect, database string) string {
	if dialect == "sqlite" && database != "" && !strings.HasPrefix(database, ":memory:") {
		if abs, err := filepath.Abs(database); err == nil {
			return abs
		}
	}
	return database
}
