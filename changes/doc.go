// Package changes turns writes to the shared database into change events on
// every instance of an application, with no broker: a write committed on
// one instance reaches subscribers on all of them.
//
// Open one Feed per instance. Write through it (Insert, Update, Delete, Tx)
// or through anything else that writes the database, and Subscribe to a
// table with an optional column filter. Each Delta says what happened
// (insert, update, delete), to which table and key, with the row after and,
// where the transport has it, the row before. A Delta with Op Resync means
// changes may have been missed (the subscriber fell behind its buffer, the
// transport reconnected, a stored position was gone): re-read the table.
//
// The transport follows the dialect of DB_URL:
//
//	postgres        LISTEN/NOTIFY (triggers installed on subscribed tables)
//	mariadb         binlog CDC: each replica tails the binary log itself
//	mysql           inline emit: only this feed's own writes, this process
//	sqlite, memory  in-process bus
//
// CDC=0 selects inline emit everywhere; a MariaDB server or user that lacks
// a binlog precondition falls back to inline emit with a log line naming it.
// The delivery promise is documented in docs/reactivity.md.
package changes
