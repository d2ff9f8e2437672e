// Primary-key discovery, so deltas carry the key of the row.

package rowsql

import (
	"context"
	"fmt"
)

// PrimaryKey lists the primary-key columns of table in key order; empty when
// the table has none.
func PrimaryKey(ctx context.Context, q Querier, d Dialect, table string) ([]string, error) {
	if err := CheckIdent("table", table); err != nil {
		return nil, err
	}
	arg := table
	if d.QuotedTableArg {
		arg = d.Quote(table)
	}
	rows, err := q.QueryContext(ctx, d.PrimaryKeyQuery, arg)
	if err != nil {
		return nil, fmt.Errorf("primary key of %s: %w", table, err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, fmt.Errorf("primary key of %s: %w", table, err)
		}
		cols = append(cols, c)
	}
	return cols, rows.Err()
}
