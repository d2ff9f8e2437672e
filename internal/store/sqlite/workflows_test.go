// Workflow store tests: the workflow conformance suite on a fresh database
// file per store, and racing journal writers.

package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/sqlite"
)

// TestAppendJournalRace: writers racing for one (execution, seq) under the
// same fence, through two handles on the file (so through SQLite's own write
// lock, not only the handle's single write connection): exactly one wins,
// the others get errs.ErrAlreadyExists.
func TestAppendJournalRace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "race.db")
	s := openTest(t, path)
	handles := []*sqlite.Store{s, openTest(t, path)}
	start := &store.Message{Shard: "default/1", EntityType: "workflow/order", EntityID: "wf1", Tag: "start", DedupeKey: "wf-start:wf1"}
	if _, _, _, err := s.StartExecution(ctx, store.Execution{ID: "wf1", Name: "order", Shard: "default/1", Input: []byte(`{}`)},
		store.StartContext{}, start, nil); err != nil {
		t.Fatal(err)
	}
	l, err := s.NewLocker(ctx, store.LockRow, "me:1")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	epoch, ok, err := l.Acquire(ctx, "default/1", time.Minute)
	if err != nil || !ok {
		t.Fatalf("acquire: ok=%v err=%v", ok, err)
	}
	f := store.Fence{Owner: "me:1", Epoch: epoch}

	const writers = 8
	errc := make(chan error, writers)
	var ready, wg sync.WaitGroup
	ready.Add(writers)
	gate := make(chan struct{})
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ready.Done()
			<-gate
			errc <- store.AppendJournal(ctx, handles[i%len(handles)], "default/1", f, store.JournalEntry{ExecutionID: "wf1", Seq: 3, Kind: store.JournalStep,
				Name: "charge", Result: []byte(fmt.Sprint(i)), Attempts: 1, Runner: "me:1", StartedAt: time.Now()})
		}()
	}
	ready.Wait()
	close(gate)
	wg.Wait()
	close(errc)
	wins := 0
	for err := range errc {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, errs.ErrAlreadyExists):
			t.Errorf("a losing writer must get already_exists: %v", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d writers won, want exactly 1", wins)
	}
	j, err := s.Journal(ctx, "wf1")
	if err != nil {
		t.Fatal(err)
	}
	if len(j) != 1 || j[0].Seq != 3 || len(j[0].Result) == 0 {
		t.Fatalf("journal after the race: %+v", j)
	}

	// A writer whose fence is gone is told so, not "already exists".
	if _, ok, err := l.Acquire(ctx, "default/1", time.Minute); err != nil || !ok {
		t.Fatalf("re-acquire: ok=%v err=%v", ok, err)
	}
	err = store.AppendJournal(ctx, s, "default/1", f, store.JournalEntry{ExecutionID: "wf1", Seq: 3, Kind: store.JournalStep})
	if !errors.Is(err, errs.ErrFenced) {
		t.Fatalf("stale epoch on an existing entry: want fenced, got %v", err)
	}
	err = store.UpdateExecution(ctx, s, store.ExecutionUpdate{ID: "nope", Shard: "default/1", Fence: store.Fence{Owner: "me:1", Epoch: epoch + 1}, Status: store.ExecCompleted})
	if !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("update of an unknown run: %v", err)
	}
}
