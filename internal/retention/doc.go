// Package retention keeps the tables bounded: it deletes finished workflow
// runs with every row that belongs to them, processed messages with their
// replies, dead letters and the rows of runners gone for good, once they
// are older than the retention in force (docs/retention.md). A Pass walks
// every kind in small batches (store.Retention), pausing between batches so
// that no lock is held for long and live work does not queue behind it.
// The Sweeper service makes a pass at an interval, on one instance at a
// time: the one holding the retention shard, the cluster's own ownership.
// `voltro gc` runs a Pass once.
package retention
