// Package storetest is the conformance suite every store.Driver must pass.
// Each driver's own test calls Exercise, its one entry point, with a
// factory that returns an empty, migrated store on the clock it is given
// (memory.WithClock, the SQL stores' Options.Clock): every case runs on a
// Clock of its own, and lease, claim, delivery, heartbeat and schedule
// expiry is tested by advancing that clock, not by sleeping. Exercise runs
// every group of the contract and every capability the store reports; it
// skips, by name, only the capabilities a store lacks.
package storetest
