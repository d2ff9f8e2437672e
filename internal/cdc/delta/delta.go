package delta

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// Op is what happened to a row.
type Op string

const (
	Insert Op = "insert"
	Update Op = "update"
	Delete Op = "delete"
	// Resync is not a row change: the subscriber may have missed changes
	// (its buffer overflowed, the transport reconnected after a gap, a stored
	// position was gone) and must re-read the table to rebuild its view.
	Resync Op = "resync"
)

// Row is one row as column name -> value. Values are plain Go values: nil,
// bool, int64, uint64, float64, string, json.Number (exact non-integers from
// PostgreSQL), time.Time (inline path) or []byte (binary data).
type Row = map[string]any

// Delta is one change of one row, or a resync signal when Op is Resync.
type Delta struct {
	Op    Op     `json:"op"`
	Table string `json:"table"`
	// Key is the primary key of the row (column -> value).
	Key Row `json:"key,omitempty"`
	// Row is the row after the change; nil for a delete.
	Row Row `json:"row,omitempty"`
	// Old is the row before an update or delete, where the transport has it.
	Old Row `json:"old,omitempty"`
	// Reason says why a Resync was sent.
	Reason string `json:"reason,omitempty"`
}

// IsResync reports whether d asks the subscriber to re-read its table.
func (d Delta) IsResync() bool { return d.Op == Resync }

// NewResync builds the resync signal for table.
func NewResync(table, reason string) Delta {
	return Delta{Op: Resync, Table: table, Reason: reason}
}

// KeyOf picks the key columns out of row. It returns nil when cols is empty
// or a key column is missing.
func KeyOf(row Row, cols []string) Row {
	if len(cols) == 0 || row == nil {
		return nil
	}
	k := make(Row, len(cols))
	for _, c := range cols {
		v, ok := row[c]
		if !ok {
			return nil
		}
		k[c] = v
	}
	return k
}

// Normalize turns driver values into the plain forms documented on Row:
// integers widen to int64, float32 to float64, valid UTF-8 byte slices become
// strings, and json.Number becomes int64 when it is an integer.
func Normalize(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case uint:
		return uint64(x)
	case float32:
		return float64(x)
	case []byte:
		if utf8.Valid(x) {
			return string(x)
		}
		return append([]byte(nil), x...)
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		return x
	case time.Time:
		return x
	case fmt.Stringer:
		// decimal types and the like: keep their exact text
		return x.String()
	}
	return v
}

// NormalizeRow applies Normalize to every value of r in place and returns it.
func NormalizeRow(r Row) Row {
	for k, v := range r {
		r[k] = Normalize(v)
	}
	return r
}
