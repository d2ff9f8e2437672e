package store

// Capabilities: what a store offers beyond the contract every store keeps.
// A caller asks Driver.Capabilities, never the store's type: a nil field is
// a capability the store does not have, and the conformance suite skips
// its cases saying so.

import (
	"database/sql"
	"strings"
)

// Capabilities lists a store's optional parts. Every field is nil when the
// store lacks it.
type Capabilities struct {
	// SQL is the application pool of a SQL store (PostgreSQL,
	// MariaDB/MySQL, SQLite), for the application's own writes and the
	// features that keep small tables of their own (change capture).
	SQL *sql.DB
	// Tx writes starts and messages inside the caller's transaction.
	Tx TxWriter
	// CommitWaits learns when such a transaction committed, on stores
	// whose commit wakes nobody by itself (PostgreSQL's NOTIFY does).
	CommitWaits CommitWaiter
	// BatchStarts writes many starts in one transaction.
	BatchStarts BatchStarter
	// Wakes pushes wake-ups from the database (LISTEN/NOTIFY).
	Wakes WakeListener
	// Exclusive allows one executing engine per database (a SQLite file).
	Exclusive Exclusive
	// Bench holds the probes `voltro bench` sets voltro's figures beside.
	Bench BenchProbes
}

// BenchProbes are the benchmark's optional probes of the database (see
// bench.go); none is for production data paths.
type BenchProbes struct {
	CommitRate CommitProber
	Statements StatementCounter
	Seeder     HistorySeeder
	Analyzer   HistoryAnalyzer
	Databases  DatabaseCreator
}

// Absent names the capabilities c lacks, for a report ("tx, batch-starts").
func (c Capabilities) Absent() string {
	var out []string
	for _, p := range []struct {
		name    string
		present bool
	}{
		{"sql", c.SQL != nil},
		{"tx", c.Tx != nil},
		{"commit-waits", c.CommitWaits != nil},
		{"batch-starts", c.BatchStarts != nil},
		{"wakes", c.Wakes != nil},
		{"exclusive", c.Exclusive != nil},
		{"bench.commit-rate", c.Bench.CommitRate != nil},
		{"bench.statements", c.Bench.Statements != nil},
		{"bench.seeder", c.Bench.Seeder != nil},
		{"bench.analyzer", c.Bench.Analyzer != nil},
		{"bench.databases", c.Bench.Databases != nil},
	} {
		if !p.present {
			out = append(out, p.name)
		}
	}
	return strings.Join(out, ", ")
}
