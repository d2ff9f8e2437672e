// Package storetest is the conformance suite every store.Driver must pass.
// Each driver's own test calls Run with a factory that returns an empty,
// migrated store on the clock it is given (memory.WithClock, the SQL
// stores' Options.Clock): every case runs on a Clock of its own, and
// lease, claim, delivery, heartbeat and schedule expiry is tested by
// advancing that clock, not by sleeping.
package storetest
