// The data API: row writes through the feed. With a change feed running
// (PostgreSQL, MariaDB) the feed itself delivers them, to this instance and
// every other, in one commit order. With inline emit (MySQL, SQLite, memory,
// CDC=0, fallback) they are published to this feed's subscribers right after
// commit, under a per-table lock so publish order is commit order.

package cdc

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"

	"github.com/voltro/voltro/internal/cdc/delta"
	"github.com/voltro/voltro/internal/store/rowsql"
)

// Tx is a transaction of the data API. Deltas of its writes are published
// only if it commits.
type Tx struct {
	f       *Feed
	tx      *sql.Tx
	pending []delta.Delta
}

// SQL is the underlying transaction, for reads and for writes the data API
// does not cover (those emit nothing under inline emit).
func (t *Tx) SQL() *sql.Tx { return t.tx }

// Insert writes row into table and returns the stored row.
func (t *Tx) Insert(ctx context.Context, table string, row delta.Row) (delta.Row, error) {
	pk, err := t.f.primaryKey(ctx, t.tx, table)
	if err != nil {
		return nil, err
	}
	d, err := rowsql.Insert(ctx, t.tx, t.f.sqlw, pk, table, row)
	return t.keep(d, d.Row, err)
}

// Update sets the columns of set on the row of table with key and returns
// the row after.
func (t *Tx) Update(ctx context.Context, table string, key, set delta.Row) (delta.Row, error) {
	pk, err := t.f.primaryKey(ctx, t.tx, table)
	if err != nil {
		return nil, err
	}
	d, err := rowsql.Update(ctx, t.tx, t.f.sqlw, pk, table, key, set, t.f.inline())
	return t.keep(d, d.Row, err)
}

// Delete removes the row of table with key and returns it.
func (t *Tx) Delete(ctx context.Context, table string, key delta.Row) (delta.Row, error) {
	pk, err := t.f.primaryKey(ctx, t.tx, table)
	if err != nil {
		return nil, err
	}
	d, err := rowsql.Delete(ctx, t.tx, t.f.sqlw, pk, table, key)
	return t.keep(d, d.Old, err)
}

func (t *Tx) keep(d delta.Delta, r delta.Row, err error) (delta.Row, error) {
	if err != nil {
		return nil, err
	}
	if t.f.inline() {
		t.pending = append(t.pending, d)
	}
	return r, nil
}

// Tx runs fn in a transaction: committed when fn returns nil, rolled back
// (and nothing published) otherwise.
func (f *Feed) Tx(ctx context.Context, fn func(tx *Tx) error) error {
	if f.noData != nil {
		return f.noData
	}
	stx, err := f.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	t := &Tx{f: f, tx: stx}
	if err := fn(t); err != nil {
		_ = stx.Rollback()
		return err
	}
	return f.commit(t)
}

// commit commits t and publishes its deltas; with inline emit it holds the
// order locks of the tables written, so two commits touching a table are
// published in the order they committed.
func (f *Feed) commit(t *Tx) error {
	if len(t.pending) == 0 {
		if err := t.tx.Commit(); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		return nil
	}
	unlock := f.lockTables(t.pending)
	defer unlock()
	if err := t.tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	f.bus.Publish(t.pending...)
	return nil
}

func (f *Feed) lockTables(ds []delta.Delta) func() {
	tables := make([]string, 0, 1)
	for _, d := range ds {
		if !slices.Contains(tables, d.Table) {
			tables = append(tables, d.Table)
		}
	}
	slices.Sort(tables)
	locks := make([]*sync.Mutex, len(tables))
	f.mu.Lock()
	for i, t := range tables {
		m := f.order[t]
		if m == nil {
			m = &sync.Mutex{}
			f.order[t] = m
		}
		locks[i] = m
	}
	f.mu.Unlock()
	for _, m := range locks {
		m.Lock()
	}
	return func() {
		for i := len(locks) - 1; i >= 0; i-- {
			locks[i].Unlock()
		}
	}
}

func (f *Feed) inline() bool { return !f.transport.CrossInstance() }

// Insert writes one row into table and returns the stored row (defaults and
// generated keys filled in).
func (f *Feed) Insert(ctx context.Context, table string, row delta.Row) (delta.Row, error) {
	if f.inline() {
		var out delta.Row
		err := f.Tx(ctx, func(tx *Tx) (err error) { out, err = tx.Insert(ctx, table, row); return err })
		return out, err
	}
	pk, err := f.primaryKey(ctx, f.db, table)
	if err != nil {
		return nil, err
	}
	d, err := rowsql.Insert(ctx, f.db, f.sqlw, pk, table, row)
	return d.Row, err
}

// Update sets the columns of set on the row of table with key and returns
// the row after. A missing row is a not_found error.
func (f *Feed) Update(ctx context.Context, table string, key, set delta.Row) (delta.Row, error) {
	if f.inline() {
		var out delta.Row
		err := f.Tx(ctx, func(tx *Tx) (err error) { out, err = tx.Update(ctx, table, key, set); return err })
		return out, err
	}
	pk, err := f.primaryKey(ctx, f.db, table)
	if err != nil {
		return nil, err
	}
	d, err := rowsql.Update(ctx, f.db, f.sqlw, pk, table, key, set, false)
	return d.Row, err
}

// Delete removes the row of table with key and returns it. A missing row is
// a not_found error.
func (f *Feed) Delete(ctx context.Context, table string, key delta.Row) (delta.Row, error) {
	if f.inline() {
		var out delta.Row
		err := f.Tx(ctx, func(tx *Tx) (err error) { out, err = tx.Delete(ctx, table, key); return err })
		return out, err
	}
	pk, err := f.primaryKey(ctx, f.db, table)
	if err != nil {
		return nil, err
	}
	d, err := rowsql.Delete(ctx, f.db, f.sqlw, pk, table, key)
	return d.Old, err
}
