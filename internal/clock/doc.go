// Package clock is the one time source of the parts that decide when work
// becomes due: delivery and step retry backoff, cron ticks, the timestamps
// the workflow runtime writes. Real reads the wall clock; Virtual is moved
// by a test environment, which skips ahead only while nothing holds it
// (Hold: work in progress). Liveness loops
// (heartbeats, safety polls, health) stay on the wall clock: they decide
// nothing about when work is due.
package clock
