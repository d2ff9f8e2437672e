// The Feed: a documented wrapper of the internal feed, converting the
// deltas it hands out to the public types.

package changes

import (
	"context"
	"database/sql"
	"net/http"
	"time"

	"github.com/voltro/voltro/internal/cdc"
	"github.com/voltro/voltro/internal/cdc/delta"
)

// Feed is the change feed of one instance; see the package documentation.
// Open one per instance (an App opens its own: App.Changes), write through
// it, Subscribe to tables, Close it at the end.
type Feed struct {
	f *cdc.Feed
}

func wrap(f *cdc.Feed) *Feed { return &Feed{f: f} }

// Start runs the transport and returns once changes committed from now on
// (and, on MariaDB, since the stored position) will be delivered. Open
// calls it; call it yourself after New.
func (f *Feed) Start(ctx context.Context) error { return f.f.Start(ctx) }

// Close stops the transport, ends every subscription (their channels are
// closed) and closes the pool unless it was passed in Config.DB.
func (f *Feed) Close() error { return f.f.Close() }

// Subscribe returns the deltas of table that pass filter (nil for all), in
// commit order, until ctx ends or the feed closes; then the channel is
// closed. Each subscription queues up to Config.Buffer deltas for a slow
// reader; past that its queue is replaced by one delta with Op Resync,
// which means changes may have been missed: re-read the table.
func (f *Feed) Subscribe(ctx context.Context, table string, filter Filter) (<-chan Delta, error) {
	in, err := f.f.Subscribe(ctx, table, delta.Filter(filter))
	if err != nil {
		return nil, err
	}
	out := make(chan Delta)
	go func() {
		defer close(out)
		for d := range in {
			select {
			case out <- fromInternal(d):
			case <-ctx.Done():
				return // the subscription has ended
			case <-f.f.Done():
				return
			}
		}
	}()
	return out, nil
}

// Insert writes one row into table and returns the stored row (defaults and
// generated keys filled in).
func (f *Feed) Insert(ctx context.Context, table string, row Row) (Row, error) {
	return f.f.Insert(ctx, table, row)
}

// Update sets the columns of set on the row of table with key and returns
// the row after. A missing row is an error with code not_found.
func (f *Feed) Update(ctx context.Context, table string, key, set Row) (Row, error) {
	return f.f.Update(ctx, table, key, set)
}

// Delete removes the row of table with key and returns it. A missing row is
// an error with code not_found.
func (f *Feed) Delete(ctx context.Context, table string, key Row) (Row, error) {
	return f.f.Delete(ctx, table, key)
}

// Tx runs fn in a transaction: committed when fn returns nil, rolled back
// (and nothing published) otherwise.
func (f *Feed) Tx(ctx context.Context, fn func(tx *Tx) error) error {
	return f.f.Tx(ctx, func(t *cdc.Tx) error { return fn(&Tx{t: t}) })
}

// DB is the application pool (nil on the memory store when the program
// does not import driver/sqlite). Writes made with it directly are seen by
// the PostgreSQL and MariaDB feeds, not by inline emit.
func (f *Feed) DB() *sql.DB { return f.f.DB() }

// SSEHandler serves the feed as text/event-stream to browsers: GET
// ?table=T&where=COL=VALUE. Each event is named by the delta's op (insert,
// update, delete, resync) and carries the delta as JSON; ids count up per
// stream. Only the tables in opts.Tables are served.
func (f *Feed) SSEHandler(opts SSEOptions) http.Handler { return f.f.SSEHandler(cdc.SSEOptions(opts)) }

// SSEOptions tunes Feed.SSEHandler.
type SSEOptions struct {
	// Tables lists the tables the endpoint may serve; a request for any
	// other is refused with 403. Empty serves none: exposing a table to
	// browsers is a decision the application makes by name.
	Tables []string
	// Allow, when set, is asked too for each request (after Tables), e.g.
	// to check the user may watch that table. Mount the handler behind your
	// own authentication either way.
	Allow func(r *http.Request, table string) bool
	// Heartbeat is the interval of keep-alive comments (default 15 s).
	Heartbeat time.Duration
}

// Dialect is the resolved SQL dialect: postgres, mariadb, mysql, sqlite or
// memory.
func (f *Feed) Dialect() string { return string(f.f.Dialect()) }

// Transport is the resolved transport.
func (f *Feed) Transport() Transport { return Transport(f.f.Transport()) }

// Tx is a transaction of the data API, from Feed.Tx: the deltas of its
// writes are published only if it commits.
type Tx struct {
	t *cdc.Tx
}

// Insert writes row into table and returns the stored row.
func (t *Tx) Insert(ctx context.Context, table string, row Row) (Row, error) {
	return t.t.Insert(ctx, table, row)
}

// Update sets the columns of set on the row of table with key and returns
// the row after.
func (t *Tx) Update(ctx context.Context, table string, key, set Row) (Row, error) {
	return t.t.Update(ctx, table, key, set)
}

// Delete removes the row of table with key and returns it.
func (t *Tx) Delete(ctx context.Context, table string, key Row) (Row, error) {
	return t.t.Delete(ctx, table, key)
}

// SQL is the underlying transaction, for reads and for writes the data API
// does not cover (under inline emit those publish nothing).
func (t *Tx) SQL() *sql.Tx { return t.t.SQL() }
