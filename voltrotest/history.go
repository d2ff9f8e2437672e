package voltrotest

// Recorded histories and the replay check: the journals of a test's runs,
// written to a directory under version control, run against the code of
// today to catch a change that runs in flight could not resume on.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/store"
)

// History is one run as recorded: what it was started with and every
// operation its journal holds, in order.
type History struct {
	Workflow  string           `json:"workflow"`
	ID        string           `json:"id"`
	Input     json.RawMessage  `json:"input"`
	Status    voltro.RunStatus `json:"status"`
	WaitingOn string           `json:"waitingOn,omitempty"`
	Journal   []Operation      `json:"journal"`
}

// Operation is one journal entry: a step's result or final error, a sleep
// that ended, a signal received, a child's outcome.
type Operation struct {
	Seq    int                `json:"seq"`
	Kind   voltro.JournalKind `json:"kind"`
	Name   string             `json:"name"`
	Result json.RawMessage    `json:"result,omitempty"`
	Error  json.RawMessage    `json:"error,omitempty"`
}

// jsonOrString keeps b as JSON when it is JSON, else as a JSON string.
func jsonOrString(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	if json.Valid(b) {
		return json.RawMessage(b)
	}
	s, _ := json.Marshal(string(b))
	return s
}

// History reads run id's history now.
func (e *Env) History(id string) History {
	e.t.Helper()
	ctx := context.Background()
	r, err := e.look(ctx, id)
	if err != nil {
		e.t.Fatalf("voltrotest: History(%s): %v", id, err)
	}
	h := History{Workflow: r.x.Name, ID: r.x.ID, Input: jsonOrString(r.x.Input), Status: voltro.RunStatus(r.x.Status), WaitingOn: r.x.WaitingOn, Journal: []Operation{}}
	for _, j := range r.journal {
		h.Journal = append(h.Journal, Operation{Seq: j.Seq, Kind: voltro.JournalKind(j.Kind), Name: j.Name, Result: jsonOrString(j.Result), Error: jsonOrString(j.Error)})
	}
	slices.SortFunc(h.Journal, func(a, b Operation) int { return a.Seq - b.Seq })
	return h
}

// SaveHistories writes the history of every run in the Env (children
// included) to dir, one file per run named after its workflow and id,
// replacing files of the same runs. Call it at the end of a test that
// drives the runs a deploy must not break (finished and suspended ones),
// typically behind a flag of the test's own, and commit dir:
//
//	var record = flag.Bool("record", false, "record workflow histories into testdata")
//	…
//	if *record {
//		env.SaveHistories("testdata/histories")
//	}
//
// It returns the files written.
func (e *Env) SaveHistories(dir string) []string {
	e.t.Helper()
	wf := e.workflows()
	xs, err := wf.List(context.Background(), store.ExecutionFilter{})
	if err != nil {
		e.t.Fatalf("voltrotest: SaveHistories: %v", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.t.Fatalf("voltrotest: SaveHistories: %v", err)
	}
	var paths []string
	for _, x := range xs {
		b, err := json.MarshalIndent(e.History(x.ID), "", "  ")
		if err != nil {
			e.t.Fatalf("voltrotest: SaveHistories: %v", err)
		}
		p := filepath.Join(dir, fileName(x.Name, x.ID))
		if err := os.WriteFile(p, append(b, '\n'), 0o644); err != nil {
			e.t.Fatalf("voltrotest: SaveHistories: %v", err)
		}
		paths = append(paths, p)
	}
	slices.Sort(paths)
	return paths
}

// fileName is a portable file name for a run (child ids hold a '/').
func fileName(workflow, id string) string {
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '/' || r == '\\' || r == ':' || r == ' ' {
				return '_'
			}
			return r
		}, s)
	}
	return clean(workflow) + "." + clean(id) + ".json"
}

// ReadHistories reads every *.json history in dir, in name order.
func ReadHistories(dir string) ([]History, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	out := make([]History, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var h History
		if err := json.Unmarshal(b, &h); err != nil {
			return nil, fmt.Errorf("history %s: %w", p, err)
		}
		out = append(out, h)
	}
	return out, nil
}

// CheckHistory replays h against the code registered in the Env, writing
// nothing and running no step: each recorded operation returns what it
// recorded, and the first operation past the journal ends the replay
// where the run would go on. It returns nil when the code agrees with h;
// an error matching voltro.ErrNonDeterminism when it asks for another
// operation, name or order at a recorded position, waits on something else
// where the run waits (h.WaitingOn), or ends before the journal or the
// wait; voltro.ErrHandlerPanic when it panics; and
// voltro.ErrUnregistered when h's workflow is not registered.
func (e *Env) CheckHistory(h History) error {
	journal := make([]store.JournalEntry, 0, len(h.Journal))
	for _, op := range h.Journal {
		journal = append(journal, store.JournalEntry{ExecutionID: h.ID, Seq: op.Seq, Kind: store.JournalKind(op.Kind), Name: op.Name, Result: op.Result, Error: op.Error})
	}
	return e.workflows().Replay(context.Background(), h.ID, h.Workflow, h.Input, journal, h.WaitingOn)
}

// Replay checks every history recorded in dir (SaveHistories) against the
// workflows among items, as a deploy of this code would resume them, and
// fails t once per history the code no longer agrees with, naming the run
// and the first operation that differs. Run it in CI before a deploy:
//
//	func TestHistoriesStillReplay(t *testing.T) {
//		voltrotest.Replay(t, "testdata/histories", order, payment)
//	}
//
// A directory with no history fails t too: a check of nothing is no check.
func Replay(t testing.TB, dir string, items ...voltro.Registrable) {
	t.Helper()
	hs, err := ReadHistories(dir)
	if err != nil {
		t.Fatalf("voltrotest: Replay: %v", err)
	}
	if len(hs) == 0 {
		t.Fatalf("voltrotest: Replay: no history (*.json) in %s", dir)
	}
	env := New(t, items...)
	for _, h := range hs {
		if err := env.CheckHistory(h); err != nil {
			t.Errorf("voltrotest: Replay: %s (%s, recorded %s): %v", fileName(h.Workflow, h.ID), h.Workflow, h.Status, err)
		}
	}
}
