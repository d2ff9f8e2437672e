package registry

import (
	"path/filepath"
	"strings"
	"time"
)

// The environment variables of the registry (internal/config reads them).
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
