package workflow

// Versioning for deploys that change a workflow's code while runs are in
// flight: a patch marker in the journal says which branch a run took at a
// change, so every replay takes it again, on old code or new.

import (
	"github.com/voltro/voltro/internal/store"
)

// Patched reports whether the run takes the new branch of change id at
// this point. A run whose journal already records another operation here
// (it passed this point under code without the patch) takes the old branch
// (false) and nothing is consumed; so does a run that was suspended here
// (on a signal, a child), whose wait is journaled only when it ends. A run
// with a marker for id here takes the new one (true). A run that reaches
// this point for the first time records a marker and takes the new branch:
// new runs, and in-flight runs that had not got this far yet.
func (c *Context) Patched(id string) bool {
	if c.unwound != nil {
		panic(c.unwound)
	}
	if e, ok := c.journal[c.seq]; ok {
		if e.Kind == store.JournalPatch && e.Name == id {
			c.seq++
			return true
		}
		return false
	}
	if c.seq < c.reached {
		return false
	}
	seq, _ := c.next(store.JournalPatch, id)
	c.record(seq, store.JournalEntry{Kind: store.JournalPatch, Name: id, Attempts: 1, StartedAt: c.w.clk.Now()})
	return true
}

// DeprecatePatch stands where Patched(id) stood once the old branch is
// gone: a run with a marker for id here consumes it; any other run passes
// without recording anything.
func (c *Context) DeprecatePatch(id string) {
	if c.unwound != nil {
		panic(c.unwound)
	}
	if e, ok := c.journal[c.seq]; ok && e.Kind == store.JournalPatch && e.Name == id {
		c.seq++
	}
}
