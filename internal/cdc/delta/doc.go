// Package delta holds the value a change feed hands to subscribers: one row
// change (or a resync signal) of one table, the same shape on every transport.
package delta
