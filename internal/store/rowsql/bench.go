// The tables and plain writes of `voltro bench cdc`.

package rowsql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// CreateSerialTable drops table and creates it again as d.SerialTable.
func CreateSerialTable(ctx context.Context, db *sql.DB, d Dialect, table string) error {
	if err := CheckIdent("table", table); err != nil {
		return err
	}
	if err := DropTable(ctx, db, table); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, fmt.Sprintf(d.SerialTable, table)); err != nil {
		return fmt.Errorf("create %s: %w", table, err)
	}
	return nil
}

// DropTable drops table if it exists.
func DropTable(ctx context.Context, db *sql.DB, table string) error {
	if err := CheckIdent("table", table); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS "+table); err != nil {
		return fmt.Errorf("drop %s: %w", table, err)
	}
	return nil
}

// PlainInsert is a prepared-once INSERT of cols into table that returns
// nothing: the database's own commit cost, for comparison.
func PlainInsert(d Dialect, table string, cols ...string) string {
	ph := make([]string, len(cols))
	for i := range cols {
		ph[i] = d.Arg(i + 1)
	}
	return "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES (" + strings.Join(ph, ", ") + ")"
}
