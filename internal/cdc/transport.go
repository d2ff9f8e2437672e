// The transports a feed can resolve to, with the names shown in the boot
// log, the inspect endpoint and `voltro cluster status`.

package cdc

import "github.com/voltro/voltro/internal/store"

// Transport is how changes reach subscribers.
type Transport string

const (
	// Notify: PostgreSQL triggers + LISTEN/NOTIFY; every instance sees every
	// committed change, including writes from outside voltro.
	Notify Transport = "notify"
	// Binlog: each MariaDB replica tails the binary log.
	Binlog Transport = "binlog"
	// Inline: writes made through this feed are published to its own
	// subscribers after commit; nothing crosses instances.
	Inline Transport = "inline"
	// Bus: the single-process dialects (SQLite, memory) publish in process.
	Bus Transport = "bus"
)

// Label is the human form used in logs.
func (t Transport) Label() string {
	switch t {
	case Notify:
		return "LISTEN/NOTIFY"
	case Binlog:
		return "binlog CDC (ROW)"
	case Bus:
		return "in-process bus"
	default:
		return "inline emit"
	}
}

// CrossInstance reports whether other instances' writes are delivered.
func (t Transport) CrossInstance() bool { return t == Notify || t == Binlog }

// Follows reports whether the feed delivers other instances' changes of
// table: every table with triggers (Notify), what the binlog reader does
// not skip (store.BinlogFollows), none on the other transports.
func (f *Feed) Follows(table string) bool {
	switch f.transport {
	case Notify:
		return true
	case Binlog:
		return store.BinlogFollows(table)
	}
	return false
}
