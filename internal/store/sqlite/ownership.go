// The file ownership guard: one executing engine per SQLite database file,
// enforced by an OS lock on a sidecar file held for the engine's lifetime.

package sqlite

import (
	"fmt"
	"path/filepath"
	"sync"

	"github.com/gofrs/flock"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// LockFileSuffix names the sidecar lock file next to the database file.
const LockFileSuffix = ".voltro-workflow-lock"

// Ownership is a held guard on one database file. The OS releases it when
// the process ends, however it ends; the empty sidecar file stays on disk
// and must not be deleted while an engine runs.
//
// The guard touches only the sidecar, never the database: other connections
// (dashboards, the application's own queries) read and write meanwhile.
type Ownership struct {
	path string // the sidecar lock file
	key  string // absolute path, the key in held
	fl   *flock.Flock

	mu       sync.Mutex
	released bool
}

// held tracks the guards this process holds, so a second acquisition in the
// same process fails even on platforms whose file locks are per process.
var (
	heldMu sync.Mutex
	held   = map[string]bool{}
)

// AcquireOwnership takes the guard on dbPath without waiting. If another
// engine, in this process or another, holds it, the error has code
// errs.CodeLocked.
func AcquireOwnership(dbPath string) (*Ownership, error) {
	if err := checkPath(dbPath); err != nil {
		return nil, err
	}
	lockPath := dbPath + LockFileSuffix
	key, err := filepath.Abs(lockPath)
	if err != nil {
		return nil, errs.Wrap(errs.CodeInvalidConfig, err, fmt.Sprintf("sqlite ownership: resolve %s", lockPath))
	}
	heldMu.Lock()
	defer heldMu.Unlock()
	if held[key] {
		return nil, lockedErr(dbPath, lockPath, "by this process")
	}
	fl := flock.New(lockPath)
	ok, err := fl.TryLock()
	if err != nil {
		return nil, errs.Wrap(errs.CodeUnavailable, err, fmt.Sprintf("sqlite ownership: lock %s", lockPath))
	}
	if !ok {
		return nil, lockedErr(dbPath, lockPath, "by another process")
	}
	held[key] = true
	return &Ownership{path: lockPath, key: key, fl: fl}, nil
}

func lockedErr(dbPath, lockPath, by string) error {
	return errs.New(errs.CodeLocked,
		"sqlite database %s is owned by another running engine (lock file %s is held %s): "+
			"stop that engine before starting this one; to run several executing replicas, use PostgreSQL or MariaDB",
		dbPath, lockPath, by)
}

// Path is the sidecar lock file.
func (o *Ownership) Path() string { return o.path }

// Release gives the guard up. The sidecar file stays. Calling it again does
// nothing.
func (o *Ownership) Release() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.released {
		return nil
	}
	o.released = true
	err := o.fl.Unlock()
	heldMu.Lock()
	delete(held, o.key)
	heldMu.Unlock()
	if err != nil {
		return fmt.Errorf("sqlite ownership: unlock %s: %w", o.path, err)
	}
	return nil
}

var _ store.Exclusive = (*Store)(nil)

// AcquireOwnership takes the file ownership guard of the store's database
// (store.Exclusive): one executing engine per SQLite file.
func (s *Store) AcquireOwnership() (release func() error, err error) {
	own, err := AcquireOwnership(s.path)
	if err != nil {
		return nil, err
	}
	return own.Release, nil
}
