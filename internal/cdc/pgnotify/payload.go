// Notifications carry a table, an operation and a primary key, nothing else:
// LISTEN needs no privilege, so anything in a payload is readable by every
// role that can connect, and NOTIFY needs none either, so anything in it may
// be forged. Resolve turns a note into deltas by re-reading the row with the
// application's own privileges and checking it against the note.

package pgnotify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/voltro/voltro/internal/cdc/delta"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store/postgres"
	"github.com/voltro/voltro/internal/store/rowsql"
)

// Note is one decoded notification: what a trigger says happened, not yet
// believed.
type Note struct {
	Table string
	// Op is insert, update, delete, or resync (a truncate, or a key too
	// large for a payload).
	Op string
	// Key is the primary key after the change (before it, for a delete).
	Key delta.Row
	// OldKey is the key before an update that changed it; nil otherwise.
	OldKey delta.Row
}

type payload struct {
	Table  string    `json:"t"`
	Op     string    `json:"op"`
	Key    delta.Row `json:"k"`
	OldKey delta.Row `json:"ok"`
}

// Parse decodes one notification payload.
func Parse(raw string) (Note, error) {
	var p payload
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.UseNumber()
	if err := dec.Decode(&p); err != nil {
		return Note{}, errs.Wrap(errs.CodeDecode, err, "change notification payload")
	}
	n := Note{Table: p.Table, Op: p.Op, Key: delta.NormalizeRow(p.Key), OldKey: delta.NormalizeRow(p.OldKey)}
	if err := rowsql.CheckIdent("table", n.Table); err != nil {
		return Note{}, errs.Wrap(errs.CodeDecode, err, "change notification")
	}
	switch n.Op {
	case "truncate", "resync":
		n.Op = string(delta.Resync)
	case string(delta.Insert), string(delta.Update), string(delta.Delete):
	default:
		return n, errs.New(errs.CodeDecode, "change notification: unknown op %q", p.Op)
	}
	return n, nil
}

// Resolve turns n into the deltas it stands for on table n.Table, whose
// primary key is pk, reading through q. It believes only what the database
// shows now, so a forged note yields nothing false:
//
//   - insert/update: the row is re-read by key and delivered as it is now;
//     no row, no delta (if it was deleted since, its delete follows);
//   - delete: delivered, with its key only, only when no row has that key
//     now;
//   - an update that changed the key is also a delete of the old key,
//     checked the same way;
//   - a key whose columns are not exactly pk is refused (Rejected).
//
// What a forger can still cause is a delta that agrees with the committed
// state: a repeated or spurious insert/update carrying the real current row,
// a delete of a key that has no row, a resync. The delivery promise is
// at-least-once already, so subscribers apply deltas idempotently.
func Resolve(ctx context.Context, q rowsql.Querier, n Note, pk []string) ([]delta.Delta, error) {
	if n.Op == string(delta.Resync) {
		return []delta.Delta{delta.NewResync(n.Table, "table truncated")}, nil
	}
	if len(pk) == 0 {
		// nothing to re-read a row by: tell the subscriber to re-read
		return []delta.Delta{delta.NewResync(n.Table, "table has no primary key: re-read it")}, nil
	}
	if !isKey(n.Key, pk) || (n.OldKey != nil && (n.Op != string(delta.Update) || !isKey(n.OldKey, pk))) {
		return nil, &Rejected{Table: n.Table, Why: "key columns are not the primary key"}
	}
	d := postgres.RowDialect
	var out []delta.Delta
	gone := func(key delta.Row) (bool, error) {
		row, err := rowsql.SelectByKey(ctx, q, d, n.Table, key)
		if err != nil {
			return false, fmt.Errorf("re-read %s: %w", n.Table, err)
		}
		return row == nil, nil
	}
	if n.OldKey != nil && !sameKey(n.OldKey, n.Key) {
		ok, err := gone(n.OldKey)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, delta.Delta{Op: delta.Delete, Table: n.Table, Key: n.OldKey})
		}
	}
	if n.Op == string(delta.Delete) {
		ok, err := gone(n.Key)
		if err != nil || !ok {
			return out, err
		}
		return append(out, delta.Delta{Op: delta.Delete, Table: n.Table, Key: n.Key}), nil
	}
	row, err := rowsql.SelectByKey(ctx, q, d, n.Table, n.Key)
	if err != nil {
		return out, fmt.Errorf("re-read %s: %w", n.Table, err)
	}
	if row == nil {
		return out, nil
	}
	return append(out, delta.Delta{Op: delta.Op(n.Op), Table: n.Table, Key: delta.KeyOf(row, pk), Row: row}), nil
}

// Rejected is a notification that cannot have come from a voltro trigger.
type Rejected struct{ Table, Why string }

func (r *Rejected) Error() string {
	return fmt.Sprintf("change notification for %s rejected: %s", r.Table, r.Why)
}

func isKey(k delta.Row, pk []string) bool {
	if len(k) != len(pk) {
		return false
	}
	for _, c := range pk {
		if _, ok := k[c]; !ok {
			return false
		}
	}
	return true
}

func sameKey(a, b delta.Row) bool {
	return slices.Equal(slices.Sorted(maps.Keys(a)), slices.Sorted(maps.Keys(b))) &&
		maps.EqualFunc(a, b, func(x, y any) bool { return delta.Text(x) == delta.Text(y) })
}
