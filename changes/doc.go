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
// A subscriber on any instance:
//
//	feed, err := changes.Open(ctx, changes.Config{URL: os.Getenv("DB_URL"), ReplicaID: os.Getenv("POD_NAME")})
//	if err != nil { … }
//	defer feed.Close()
//	paid, err := feed.Subscribe(ctx, "orders", changes.Filter{"status": "paid"})
//	if err != nil { … }
//	for d := range paid { // closed when ctx ends or the feed closes
//		if d.IsResync() {
//			// changes may have been missed: re-read "orders"
//			continue
//		}
//		fmt.Println(d.Op, d.Key, d.Row, d.Old)
//	}
//
// and a writer on another:
//
//	_, err = feed.Update(ctx, "orders", changes.Row{"id": 1}, changes.Row{"status": "paid"})
//
// A voltro App opens its own feed at New: use App.Changes rather than Open.
// New (then Subscribe, then Start) is Open for a subscriber that must see
// what a restarted MariaDB replica catches up on. Feed.SSEHandler serves
// a feed to browsers as Server-Sent Events.
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
