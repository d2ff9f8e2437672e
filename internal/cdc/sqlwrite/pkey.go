// Primary-key discovery per dialect, so deltas carry the key of the row.

package sqlwrite

import (
	"context"
	"fmt"

	"github.com/voltro/voltro/internal/store"
)

// PrimaryKey lists the primary-key columns of table in key order; empty when
// the table has none.
func PrimaryKey(ctx context.Context, q Querier, d Dialect, table string) ([]string, error) {
	if err := CheckIdent("table", table); err != nil {
		return nil, err
	}
	var query string
	switch d.Name {
	case store.Postgres:
		query = `SELECT a.attname FROM pg_index i
			JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
			WHERE i.indrelid = to_regclass($1) AND i.indisprimary
			ORDER BY array_position(i.indkey::int2[], a.attnum)`
	case store.MariaDB, store.MySQL:
		query = `SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE
			WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND CONSTRAINT_NAME = 'PRIMARY'
			ORDER BY ORDINAL_POSITION`
	default:
		query = `SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk`
	}
	arg := table
	if d.Name == store.Postgres {
		arg = d.Quote(table)
	}
	rows, err := q.QueryContext(ctx, query, arg)
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
