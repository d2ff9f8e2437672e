// Conversion of binlog row images into deltas.

package binlog

import (
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/voltro/voltro/internal/cdc/delta"
)

// deltas turns one rows event into deltas. Update events carry before and
// after images in pairs.
func deltas(e *replication.RowsEvent) []delta.Delta {
	t := e.Table
	names := t.ColumnNameString()
	unsigned := t.UnsignedMap()
	pk := make([]string, 0, len(t.PrimaryKey))
	for _, i := range t.PrimaryKey {
		if int(i) < len(names) {
			pk = append(pk, names[i])
		}
	}
	table := string(t.Table)
	var out []delta.Delta
	switch e.Type() {
	case replication.EnumRowsEventTypeInsert:
		for _, r := range e.Rows {
			row := toRow(names, unsigned, r)
			out = append(out, delta.Delta{Op: delta.Insert, Table: table, Key: delta.KeyOf(row, pk), Row: row})
		}
	case replication.EnumRowsEventTypeUpdate:
		for i := 0; i+1 < len(e.Rows); i += 2 {
			old := toRow(names, unsigned, e.Rows[i])
			row := toRow(names, unsigned, e.Rows[i+1])
			out = append(out, delta.Delta{Op: delta.Update, Table: table, Key: delta.KeyOf(row, pk), Row: row, Old: old})
		}
	case replication.EnumRowsEventTypeDelete:
		for _, r := range e.Rows {
			old := toRow(names, unsigned, r)
			out = append(out, delta.Delta{Op: delta.Delete, Table: table, Key: delta.KeyOf(old, pk), Old: old})
		}
	}
	return out
}

func toRow(names []string, unsigned map[int]bool, vals []any) delta.Row {
	row := make(delta.Row, len(vals))
	for i, v := range vals {
		if i >= len(names) {
			break
		}
		if unsigned[i] {
			v = asUnsigned(v)
		}
		row[names[i]] = delta.Normalize(v)
	}
	return row
}

// asUnsigned reinterprets the signed integers the decoder returns for
// UNSIGNED columns.
func asUnsigned(v any) any {
	switch x := v.(type) {
	case int8:
		return int64(uint8(x))
	case int16:
		return int64(uint16(x))
	case int32:
		return int64(uint32(x))
	case int64:
		if x < 0 {
			return uint64(x)
		}
		return x
	}
	return v
}
