// The values subscribers receive, and the transports, as public types that
// mirror the internal ones.

package changes

import (
	"github.com/voltro/voltro/internal/cdc"
	"github.com/voltro/voltro/internal/cdc/delta"
)

// Delta is one change of one row, or a resync signal when Op is Resync.
// Its JSON form is the one Feed.SSEHandler sends.
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

func fromInternal(d delta.Delta) Delta {
	return Delta{Op: Op(d.Op), Table: d.Table, Key: d.Key, Row: d.Row, Old: d.Old, Reason: d.Reason}
}

func toInternal(d Delta) delta.Delta {
	return delta.Delta{Op: delta.Op(d.Op), Table: d.Table, Key: d.Key, Row: d.Row, Old: d.Old, Reason: d.Reason}
}

// Op is what happened to a row.
type Op string

// The operations a Delta carries.
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
// PostgreSQL), time.Time (inline emit) or []byte (binary data). A
// map[string]any converts to it without a cast.
type Row map[string]any

// Filter keeps the deltas whose row has every listed column equal to the
// given text (the value's text form: 42, true, paid). An empty filter keeps
// everything.
type Filter map[string]string

// ParseFilter reads COL=VALUE terms (as given to `voltro watch --where`)
// into a Filter.
func ParseFilter(terms []string) (Filter, error) {
	f, err := delta.ParseFilter(terms)
	return Filter(f), err
}

// Match reports whether d passes f. A resync always passes. An update passes
// when its new or its old row matches, so a row leaving the filtered set is
// seen. When a delta carries only its key (an oversized delete), a filter on
// non-key columns passes it: the promise is at-least-once.
func (f Filter) Match(d Delta) bool { return delta.Filter(f).Match(toInternal(d)) }

// String renders the filter as sorted COL=VALUE terms joined by AND.
func (f Filter) String() string { return delta.Filter(f).String() }

// Transport is how changes reach subscribers; Feed.Transport says which one
// a feed resolved to.
type Transport string

// The transports.
const (
	// Notify: PostgreSQL triggers and LISTEN/NOTIFY; every instance sees
	// every committed change, including writes from outside voltro.
	Notify Transport = "notify"
	// Binlog: each MariaDB replica tails the binary log.
	Binlog Transport = "binlog"
	// Inline: writes made through this feed are published to its own
	// subscribers after commit; nothing crosses instances.
	Inline Transport = "inline"
	// Bus: the single-process dialects (SQLite, memory) publish in process.
	Bus Transport = "bus"
)

// Label is the human form used in logs, e.g. "LISTEN/NOTIFY".
func (t Transport) Label() string { return cdc.Transport(t).Label() }

// CrossInstance reports whether other instances' writes are delivered.
func (t Transport) CrossInstance() bool { return cdc.Transport(t).CrossInstance() }
