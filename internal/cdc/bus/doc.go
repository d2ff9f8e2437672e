// Package bus fans deltas out to in-process subscribers. Publishing never
// blocks: each subscription has a bounded queue, and one that overflows has
// its queue replaced by a single resync signal.
package bus
