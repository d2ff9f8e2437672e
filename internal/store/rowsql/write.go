// The three row writes. Each returns the delta it caused (with the row after
// and, where asked, the row before), ready to publish after commit.

package rowsql

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/voltro/voltro/internal/cdc/delta"
	"github.com/voltro/voltro/internal/errs"
)

// Querier is what *sql.DB, *sql.Tx and *sql.Conn share.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Insert writes row into table and returns the insert delta with the stored
// row (defaults and generated keys filled in).
func Insert(ctx context.Context, q Querier, d Dialect, pk []string, table string, row delta.Row) (delta.Delta, error) {
	cols, args, err := columns(table, row)
	if err != nil {
		return delta.Delta{}, err
	}
	if len(cols) == 0 {
		return delta.Delta{}, errs.New(errs.CodeInvalidArgument, "insert into %s: no columns", table)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO %s (", d.Quote(table))
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(d.Quote(c))
	}
	b.WriteString(") VALUES (")
	for i := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(d.Arg(i + 1))
	}
	b.WriteString(")")
	out := delta.Delta{Op: delta.Insert, Table: table}
	if d.InsertReturning {
		b.WriteString(" RETURNING *")
		out.Row, err = queryRow(ctx, q, b.String(), args)
		if err != nil {
			return out, fmt.Errorf("insert into %s: %w", table, err)
		}
	} else {
		res, err := q.ExecContext(ctx, b.String(), args...)
		if err != nil {
			return out, fmt.Errorf("insert into %s: %w", table, err)
		}
		key := delta.KeyOf(row, pk)
		if key == nil && len(pk) == 1 {
			if id, err := res.LastInsertId(); err == nil {
				key = delta.Row{pk[0]: id}
			}
		}
		if key == nil {
			out.Row = maps.Clone(row)
		} else if out.Row, err = selectByKey(ctx, q, d, table, key, false); err != nil {
			return out, fmt.Errorf("insert into %s: read back: %w", table, err)
		}
	}
	if out.Row == nil {
		return out, errs.New(errs.CodeInternal, "insert into %s returned no row", table)
	}
	out.Key = keyOr(out.Row, pk, nil)
	return out, nil
}

// Update sets the columns of set on the row with key. wantOld reads the row
// before (locking it) so the delta carries Old. A missing row is NotFound.
func Update(ctx context.Context, q Querier, d Dialect, pk []string, table string, key, set delta.Row, wantOld bool) (delta.Delta, error) {
	out := delta.Delta{Op: delta.Update, Table: table}
	kcols, kargs, err := columns(table, key)
	if err != nil {
		return out, err
	}
	scols, sargs, err := columns(table, set)
	if err != nil {
		return out, err
	}
	if len(kcols) == 0 || len(scols) == 0 {
		return out, errs.New(errs.CodeInvalidArgument, "update %s: need a key and at least one column to set", table)
	}
	if wantOld {
		if out.Old, err = selectByKey(ctx, q, d, table, key, true); err != nil {
			return out, fmt.Errorf("update %s: read old row: %w", table, err)
		}
		if out.Old == nil {
			return out, errs.New(errs.CodeNotFound, "update %s: no row with key %v", table, key)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "UPDATE %s SET ", d.Quote(table))
	for i, c := range scols {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s = %s", d.Quote(c), d.Arg(i+1))
	}
	b.WriteString(" WHERE ")
	b.WriteString(d.where(kcols, len(scols)+1))
	args := append(sargs, kargs...)
	if d.UpdateReturning {
		b.WriteString(" RETURNING *")
		if out.Row, err = queryRow(ctx, q, b.String(), args); err != nil {
			return out, fmt.Errorf("update %s: %w", table, err)
		}
	} else {
		if _, err := q.ExecContext(ctx, b.String(), args...); err != nil {
			return out, fmt.Errorf("update %s: %w", table, err)
		}
		newKey := maps.Clone(key)
		for _, c := range kcols {
			if v, ok := set[c]; ok {
				newKey[c] = v
			}
		}
		if out.Row, err = selectByKey(ctx, q, d, table, newKey, false); err != nil {
			return out, fmt.Errorf("update %s: read back: %w", table, err)
		}
	}
	if out.Row == nil {
		return out, errs.New(errs.CodeNotFound, "update %s: no row with key %v", table, key)
	}
	out.Key = keyOr(out.Row, pk, key)
	return out, nil
}

// Delete removes the row with key and returns the delete delta carrying the
// removed row as Old. A missing row is NotFound.
func Delete(ctx context.Context, q Querier, d Dialect, pk []string, table string, key delta.Row) (delta.Delta, error) {
	out := delta.Delta{Op: delta.Delete, Table: table}
	kcols, kargs, err := columns(table, key)
	if err != nil {
		return out, err
	}
	if len(kcols) == 0 {
		return out, errs.New(errs.CodeInvalidArgument, "delete from %s: empty key", table)
	}
	query := fmt.Sprintf("DELETE FROM %s WHERE %s", d.Quote(table), d.where(kcols, 1))
	if d.DeleteReturning {
		if out.Old, err = queryRow(ctx, q, query+" RETURNING *", kargs); err != nil {
			return out, fmt.Errorf("delete from %s: %w", table, err)
		}
	} else {
		if out.Old, err = selectByKey(ctx, q, d, table, key, true); err != nil {
			return out, fmt.Errorf("delete from %s: read old row: %w", table, err)
		}
		if out.Old != nil {
			if _, err := q.ExecContext(ctx, query, kargs...); err != nil {
				return out, fmt.Errorf("delete from %s: %w", table, err)
			}
		}
	}
	if out.Old == nil {
		return out, errs.New(errs.CodeNotFound, "delete from %s: no row with key %v", table, key)
	}
	out.Key = keyOr(out.Old, pk, key)
	return out, nil
}

// SelectByKey reads the row of table with key, or nil when there is none.
func SelectByKey(ctx context.Context, q Querier, d Dialect, table string, key delta.Row) (delta.Row, error) {
	if err := CheckIdent("table", table); err != nil {
		return nil, err
	}
	return selectByKey(ctx, q, d, table, key, false)
}

func selectByKey(ctx context.Context, q Querier, d Dialect, table string, key delta.Row, lock bool) (delta.Row, error) {
	kcols, kargs, err := columns(table, key)
	if err != nil {
		return nil, err
	}
	query := fmt.Sprintf("SELECT * FROM %s WHERE %s", d.Quote(table), d.where(kcols, 1))
	if lock {
		query += d.ForUpdate
	}
	return queryRow(ctx, q, query, kargs)
}

// columns checks names and returns them sorted with their values.
func columns(table string, r delta.Row) ([]string, []any, error) {
	if err := CheckIdent("table", table); err != nil {
		return nil, nil, err
	}
	cols := slices.Sorted(maps.Keys(r))
	args := make([]any, len(cols))
	for i, c := range cols {
		if err := CheckIdent("column", c); err != nil {
			return nil, nil, err
		}
		args[i] = r[c]
	}
	return cols, args, nil
}

// keyOr is the primary key out of row, else fallback.
func keyOr(row delta.Row, pk []string, fallback delta.Row) delta.Row {
	if k := delta.KeyOf(row, pk); k != nil {
		return k
	}
	return maps.Clone(fallback)
}

// queryRow runs query and scans its first row into a Row (nil when none).
func queryRow(ctx context.Context, q Querier, query string, args []any) (delta.Row, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out delta.Row
	if rows.Next() {
		if out, err = ScanRow(rows); err != nil {
			return nil, err
		}
	}
	return out, rows.Err()
}

// ScanRow scans the current row of rows into a Row of plain values.
func ScanRow(rows *sql.Rows) (delta.Row, error) {
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	r := make(delta.Row, len(cols))
	for i, c := range cols {
		r[c] = delta.Normalize(vals[i])
	}
	return r, nil
}
