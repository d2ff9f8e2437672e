package dashboard

// A run's signals for its page: the stored ones (sent) joined with the
// run's journal (received) and with the sender's "signal" event; a
// received one is also drawn as an event of the run.

import (
	"slices"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// signalReceived is the kind of the event a received signal adds.
const signalReceived = "signal received"

// signalsOf lists every signal of a run, oldest first, and returns events
// with one "signal received" event per signal the journal took in, in
// time order.
func signalsOf(sigs []store.Signal, journal []journalView, attempts []attemptView, events []eventView) ([]signalView, []eventView) {
	out := []signalView{}
	// the sender's "signal" event names it (the first of a name wins, as
	// the store keeps the first)
	sender := map[string]eventView{}
	for _, e := range events {
		if _, seen := sender[e.Detail]; e.Kind == "signal" && !seen {
			sender[e.Detail] = e
		}
	}
	taken := map[string]journalView{}
	for _, j := range journal {
		if j.Kind == string(store.JournalSignal) {
			taken[j.Name] = j
		}
	}
	// the replica of the runner that journaled it: from its attempts or
	// its events on the run
	replicaOf := map[string]string{}
	for _, e := range events {
		if e.Runner != "" && e.ReplicaID != "" {
			replicaOf[e.Runner] = e.ReplicaID
		}
	}
	for _, a := range attempts {
		replicaOf[a.Runner] = a.ReplicaID
	}
	stored := map[string]bool{}
	for _, s := range sigs {
		stored[s.Name] = true
		at := s.CreatedAt
		sv := signalView{Name: s.Name, Payload: raw(s.Payload), State: "pending", SentAt: &at}
		if e, ok := sender[s.Name]; ok {
			sv.SentBy, sv.SentFrom = e.ReplicaID, e.Runner
		}
		if j, ok := taken[s.Name]; ok {
			sv.State = "received"
			sv.ReceivedAt, sv.ReceivedBy = journalTime(j), j.Runner
		}
		out = append(out, sv)
	}
	// a journaled wait with no stored signal ended without one
	for _, j := range journal {
		if j.Kind == string(store.JournalSignal) && !stored[j.Name] {
			out = append(out, signalView{Name: j.Name, Payload: j.Result, State: "timed out", ReceivedAt: journalTime(j), ReceivedBy: j.Runner})
		}
	}
	for _, sv := range out {
		if sv.State == "received" {
			events = append(events, eventView{At: *sv.ReceivedAt, Kind: signalReceived, Detail: sv.Name, ReplicaID: replicaOf[sv.ReceivedBy], Runner: sv.ReceivedBy})
		}
	}
	slices.SortStableFunc(events, func(a, b eventView) int { return a.At.Compare(b.At) })
	return out, events
}

// journalTime is when the run journaled an entry.
func journalTime(j journalView) *time.Time {
	t := j.FinishedAt
	if t.IsZero() {
		t = j.StartedAt
	}
	return &t
}
