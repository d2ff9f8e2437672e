// Package binlog is the MariaDB change feed: each replica tails the binary
// log itself (ROW images with column names, GTID positions) from the position
// it stored last, with no broker in between.
package binlog
