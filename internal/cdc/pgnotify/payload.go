// Decoding of trigger payloads into deltas, re-reading rows whose payload
// was too large for NOTIFY.
package pgnotify

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/voltro/voltro/internal/cdc/delta"
	"github.com/voltro/voltro/internal/cdc/sqlwrite"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

type payload struct {
	Table string    `json:"t"`
	Op    string    `json:"op"`
	Key   delta.Row `json:"k"`
	Row   delta.Row `json:"r"`
	Old   delta.Row `json:"o"`
	Big   bool      `json:"big"`
}

// Decode turns one notification payload into a delta. An oversized change
// (key only) is completed by reading the row through db; a truncate becomes
// a resync of its table.
func Decode(ctx context.Context, db *sql.DB, raw string) (delta.Delta, error) {
	var p payload
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.UseNumber()
	if err := dec.Decode(&p); err != nil {
		return delta.Delta{}, errs.Wrap(errs.CodeDecode, err, "change notification payload")
	}
	d := delta.Delta{
		Op:    delta.Op(p.Op),
		Table: p.Table,
		Key:   delta.NormalizeRow(p.Key),
		Row:   delta.NormalizeRow(p.Row),
		Old:   delta.NormalizeRow(p.Old),
	}
	switch d.Op {
	case delta.Insert, delta.Update, delta.Delete:
	case "truncate":
		return delta.NewResync(p.Table, "table truncated"), nil
	default:
		return d, errs.New(errs.CodeDecode, "change notification: unknown op %q", p.Op)
	}
	if p.Big && d.Op != delta.Delete && len(d.Key) > 0 {
		row, err := sqlwrite.SelectByKey(ctx, db, sqlwrite.Dialect{Name: store.Postgres}, p.Table, d.Key)
		if err != nil {
			return d, fmt.Errorf("re-read oversized change of %s: %w", p.Table, err)
		}
		d.Row = row // nil when the row is gone already: a later delete follows
	}
	return d, nil
}
