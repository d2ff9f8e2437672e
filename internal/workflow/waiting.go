package workflow

// What a suspended run waits on: written into the run's row (WaitingOn) as
// text for people, and read back here, in the same file, for code that
// must not parse it itself (voltrotest's wait conditions).

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// Waiting is what a suspended run waits on.
type Waiting struct {
	Kind  store.JournalKind // sleep, signal, child or select
	Name  string            // the signal's name; the child's execution id; a select's futures
	Seq   int               // the operation's sequence number
	Sleep time.Duration     // a sleep's duration
}

func (w Waiting) String() string {
	switch w.Kind {
	case store.JournalSignal:
		return fmt.Sprintf("signal %q (operation %d)", w.Name, w.Seq)
	case store.JournalSleep:
		return fmt.Sprintf("sleep %s (operation %d)", w.Sleep, w.Seq)
	}
	return fmt.Sprintf("%s %s (operation %d)", w.Kind, w.Name, w.Seq)
}

// is reports whether an operation of kind and name (as Context.next gets
// them) is the one w waits on. A child's name is the workflow's, not the
// child run's id that w holds, which follows from the sequence number.
func (w Waiting) is(kind store.JournalKind, name string) bool {
	return w.Kind == kind && (kind != store.JournalSignal || w.Name == name)
}

// ParseWaiting reads a run's WaitingOn back; false when it is not one
// String wrote.
func ParseWaiting(s string) (Waiting, bool) {
	i := strings.LastIndex(s, " (operation ")
	if i < 0 || !strings.HasSuffix(s, ")") {
		return Waiting{}, false
	}
	seq, err := strconv.Atoi(s[i+len(" (operation ") : len(s)-1])
	if err != nil {
		return Waiting{}, false
	}
	kind, rest, ok := strings.Cut(s[:i], " ")
	if !ok {
		return Waiting{}, false
	}
	w := Waiting{Kind: store.JournalKind(kind), Name: rest, Seq: seq}
	switch w.Kind {
	case store.JournalSignal:
		if w.Name, err = strconv.Unquote(rest); err != nil {
			return Waiting{}, false
		}
	case store.JournalSleep:
		if w.Sleep, err = time.ParseDuration(rest); err != nil {
			return Waiting{}, false
		}
		w.Name = ""
	case store.JournalChild, store.JournalSelect:
	default:
		return Waiting{}, false
	}
	return w, true
}
