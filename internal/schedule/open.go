// Opening the store of a DB_URL, for the CLI and the test processes; the
// app itself hands the Scheduler the store its engine already opened.

package schedule

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/voltro/voltro/internal/dburl"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
	"github.com/voltro/voltro/internal/store/open"
)

// StoreCloser is a Store that OpenURL opened; Close closes it.
type StoreCloser interface {
	Store
	Close() error
}

// OpenURL opens the store named by rawURL (and DB_DIALECT-style dialect,
// may be empty) and applies its migrations, which create the schedule
// tables if they are missing. The memory store keeps its schedules inside
// the app process: that is CodeInvalidConfig.
func OpenURL(ctx context.Context, rawURL, dialect string) (StoreCloser, error) {
	r, err := dburl.Resolve(rawURL, dialect)
	if err != nil {
		return nil, err
	}
	if r.Dialect == store.Memory {
		return nil, errs.New(errs.CodeInvalidConfig, "DB_URL names the %s store, whose schedules live only inside the app process", r.Dialect)
	}
	d, err := open.DB(ctx, r, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	st, ok := d.(StoreCloser)
	if !ok {
		d.Close()
		return nil, errs.New(errs.CodeInvalidConfig, "the %s store keeps no schedules", r.Dialect)
	}
	if err := d.Migrate(ctx); err != nil {
		d.Close()
		return nil, fmt.Errorf("schedules: migrating the %s store: %w", r.Dialect, err)
	}
	return st, nil
}

// StoreOf is the schedule storage of d: d itself, as every store of this
// repository keeps schedules; a driver that keeps none gets an in-process
// store of its own (schedules then coordinate within this process only,
// as on the memory store).
func StoreOf(d store.Driver) Store {
	if st, ok := d.(Store); ok {
		return st
	}
	return memory.New()
}
