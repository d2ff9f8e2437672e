// Package binlog is the MariaDB change feed: each replica tails the binary
// log itself (ROW images with column names, GTID positions) from the position
// it stored last, with no broker in between.
//
// The reader speaks the replication protocol, not SQL: what it reads and
// keeps through SQL (its resume position, the server's binlog settings and
// the replication user's grants) is the MariaDB store's, store/mysql
// changefeed.go, behind store.BinlogOffsets and store.BinlogServer. The
// reader stays here, beside the other transports, so the store package
// does not link the binlog parser.
package binlog
