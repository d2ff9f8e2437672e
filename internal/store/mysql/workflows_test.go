// Workflow store on the real server: the workflow conformance suite on
// MariaDB, the mysql dialect, single statements and Galera (with each part
// of the store on a different node), several run writes in one call,
// racing journal writes, the paths around duplicates, and benchmarks of a
// 3-step workflow and of group-committed run writes.
package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/mysql"
	"github.com/voltro/voltro/internal/testdb"
)

// freshURL opens and migrates url.
func freshURL(t testing.TB, url string, opts mysql.Options) *mysql.Store {
	t.Helper()
	s := open(t, url, opts)
	if err := s.Migrate(ctxT(t)); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return s
}

// WriteRuns with several writes in one call, in the three ways the store
// sends them: one multi-statement round trip, statement by statement, and
// on Galera statement by statement with the runs on another node than the
// locks and the claim (so the claim may not be applied there yet).
func TestWriteRunsMixed(t *testing.T) {
	for _, multi := range []bool{true, false} {
		t.Run(fmt.Sprint("multiStatements=", multi), func(t *testing.T) {
			url := testdb.MariaDB(t, "mywf_runs")
			if !multi {
				url += "?multiStatements=false"
			}
			// one connection in each pool: it must never be left in a transaction
			s := freshURL(t, url, oneConnEach(multi))
			writeRunsMixed(t, s, s)
			idleConns(t, s, "the writes")
		})
	}
}

// oneConnEach is a budget of one connection per pool: the application pool
// and, with multi statements, the batch pool (which takes half of MaxConns).
func oneConnEach(multi bool) mysql.Options {
	o := mysql.Options{MaxConns: 1, Logger: quiet.Logger}
	if multi {
		o.MaxConns = 2
	}
	return o
}

// idleConns fails unless the connection of each pool of s is out of any
// transaction after step.
func idleConns(t *testing.T, s *mysql.Store, step string) {
	t.Helper()
	for _, db := range []*sql.DB{s.DB(), mysql.BatchDB(s)} {
		if db == nil {
			continue
		}
		if n := db.Stats().MaxOpenConnections; n != 1 {
			t.Fatalf("a pool of %d connections, want 1", n)
		}
		var inTx int
		if err := db.QueryRowContext(ctxT(t), "SELECT @@in_transaction").Scan(&inTx); err != nil || inTx != 0 {
			t.Fatalf("after %s: in_transaction=%d %v", step, inTx, err)
		}
	}
}

func TestWriteRunsMixedGalera(t *testing.T) {
	urls := testdb.Galera(t)
	writeRunsMixed(t, freshURL(t, urls[0], quiet), open(t, urls[1], quiet))
}

// writeRunsMixed makes one WriteRuns call through w of a plain entry, a
// finishing write (last entry, final state and the claimed message that ran
// it), an entry at a later epoch than the fence's, an entry that exists
// with an update that must then not happen, the first entry again (the
// call's own first write makes it exist) and an update of the run whose
// entry was fenced. Locks and claims go through d.
func writeRunsMixed(t *testing.T, d store.Driver, w store.Workflows) {
	ctx := ctxT(t)
	const shard, owner = "default/1", "me:1"
	msgOf := map[string]int64{}
	for _, id := range []string{"a", "b", "c", "d"} {
		_, _, res, err := w.StartExecution(ctx, execOf(id), store.StartContext{}, startOf(id), nil)
		if err != nil {
			t.Fatal(err)
		}
		msgOf[id] = res.ID
	}
	mode, _, err := d.ResolveLockMode(ctx, store.LockAuto)
	if err != nil {
		t.Fatal(err)
	}
	l, err := d.NewLocker(ctx, mode, owner)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	epoch, ok, err := l.Acquire(ctx, shard, time.Minute)
	if err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	f := store.Fence{Owner: owner, Epoch: epoch}
	claimed, err := d.Claim(ctx, store.ClaimRequest{Owner: owner, Types: []string{"workflow/order"}, Shards: []string{shard}, Limit: 10, ClaimTTL: time.Minute})
	if err != nil || len(claimed) != 4 {
		t.Fatalf("claim the four starts: %+v %v", claimed, err)
	}
	for _, m := range claimed {
		if m.ClaimEpoch != epoch {
			t.Fatalf("claimed at epoch %d, not %d: %+v", m.ClaimEpoch, epoch, m)
		}
	}
	step := func(id string, result string) *store.JournalEntry {
		return &store.JournalEntry{ExecutionID: id, Seq: 0, Kind: store.JournalStep, Name: "s", Result: []byte(result), Attempts: 1, Runner: owner, StartedAt: time.Now()}
	}
	if err := store.AppendJournal(ctx, w, shard, f, *step("c", `"first"`)); err != nil {
		t.Fatal(err)
	}
	if err := store.AppendJournal(ctx, w, shard, f, *step("nope", `0`)); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("an entry of an unknown run: %v", err)
	}

	out, err := w.WriteRuns(ctx, []store.RunWrite{
		{Shard: shard, Fence: f, Entry: step("a", `1`)},
		{Shard: shard, Fence: f, Entry: step("b", `2`), Message: msgOf["b"],
			Update: &store.ExecutionUpdate{ID: "b", Status: store.ExecCompleted, Output: []byte(`"done"`), Runner: owner}},
		{Shard: shard, Fence: store.Fence{Owner: owner, Epoch: epoch + 1}, Entry: step("d", `4`)},
		{Shard: shard, Fence: f, Entry: step("c", `"second"`),
			Update: &store.ExecutionUpdate{ID: "c", Status: store.ExecCompleted, Output: []byte(`3`)}},
		{Shard: shard, Fence: f, Entry: step("a", `"again"`)},
		{Shard: shard, Fence: f, Update: &store.ExecutionUpdate{ID: "d", Status: store.ExecSuspended, WaitingOn: "sleep 1s"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []error{nil, nil, errs.ErrFenced, errs.ErrAlreadyExists, errs.ErrAlreadyExists, nil}
	if len(out) != len(want) {
		t.Fatalf("%d outcomes for %d writes: %v", len(out), len(want), out)
	}
	for i, o := range out {
		if (want[i] == nil) != (o == nil) || !errors.Is(o, want[i]) {
			t.Fatalf("write %d: outcome %v, want %v", i, o, want[i])
		}
	}

	journal := func(id string) []store.JournalEntry {
		t.Helper()
		j, err := w.Journal(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	exec := func(id string) store.Execution {
		t.Helper()
		x, err := w.GetExecution(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	if j := journal("a"); len(j) != 1 || string(j[0].Result) != "1" {
		t.Fatalf("a's journal keeps the call's first entry: %+v", j)
	}
	if j := journal("b"); len(j) != 1 || string(j[0].Result) != "2" {
		t.Fatalf("b's journal: %+v", j)
	}
	if x := exec("b"); x.Status != store.ExecCompleted || string(x.Output) != `"done"` || x.Runner != owner || x.FinishedAt.IsZero() {
		t.Fatalf("b must be completed: %+v", x)
	}
	if m, err := d.GetMessage(ctx, msgOf["b"]); err != nil || m.State != store.StateProcessed || m.ProcessedAt.IsZero() || !m.ClaimExpiresAt.IsZero() {
		t.Fatalf("b's start message must be processed: %+v %v", m, err)
	}
	if r, err := d.GetReply(ctx, msgOf["b"]); err != nil || r == nil || r.Payload != nil || r.Error != nil {
		t.Fatalf("b's start message must have an empty reply: %+v %v", r, err)
	}
	if j := journal("c"); len(j) != 1 || string(j[0].Result) != `"first"` {
		t.Fatalf("c's journal keeps the entry that existed: %+v", j)
	}
	if x := exec("c"); x.Status != store.ExecRunning || x.Output != nil || !x.FinishedAt.IsZero() {
		t.Fatalf("c's update must not happen when its entry existed: %+v", x)
	}
	if j := journal("d"); len(j) != 0 {
		t.Fatalf("a fenced entry must not be written: %+v", j)
	}
	if x := exec("d"); x.Status != store.ExecSuspended || x.WaitingOn != "sleep 1s" {
		t.Fatalf("d must be suspended: %+v", x)
	}
	for _, id := range []string{"a", "c", "d"} {
		if m, err := d.GetMessage(ctx, msgOf[id]); err != nil || m.State != store.StateClaimed {
			t.Fatalf("%s's start message must stay claimed: %+v %v", id, m, err)
		}
		if r, err := d.GetReply(ctx, msgOf[id]); err != nil || r != nil {
			t.Fatalf("%s's start message has no reply: %+v %v", id, r, err)
		}
	}

	// Finishing a run whose message is no longer claimed at the fence: the
	// run is written, the outcome says fenced.
	out, err = w.WriteRuns(ctx, []store.RunWrite{
		{Shard: shard, Fence: f, Entry: &store.JournalEntry{ExecutionID: "a", Seq: 1, Kind: store.JournalStep, Name: "s", Result: []byte(`2`)},
			Update: &store.ExecutionUpdate{ID: "a", Status: store.ExecFailed, Error: []byte(`"boom"`)}, Message: msgOf["b"]},
		{Shard: shard, Fence: f, Update: &store.ExecutionUpdate{ID: "b", Status: store.ExecRunning}, Message: msgOf["c"]},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(out[0], errs.ErrFenced) || !errors.Is(out[1], errs.ErrAlreadyExists) {
		t.Fatalf("outcomes %v, want fenced (message) and already exists (finished run)", out)
	}
	if x := exec("a"); x.Status != store.ExecFailed || string(x.Error) != `"boom"` || len(journal("a")) != 2 {
		t.Fatalf("a must be failed with its second entry: %+v", x)
	}
	if m, err := d.GetMessage(ctx, msgOf["c"]); err != nil || m.State != store.StateClaimed {
		t.Fatalf("c's message is completed only with its update: %+v %v", m, err)
	}
}

func TestAppendJournalRace(t *testing.T) {
	s, _ := fresh(t, "mywf_race", quiet)
	appendRace(t, []*mysql.Store{s})
}

// Galera re-runs a conflicting autocommit statement once by itself; off
// here, so the certification conflicts of inserts of one key on several
// nodes reach the store's retry as 1213.
func TestAppendJournalRaceGalera(t *testing.T) {
	urls := testdb.Galera(t)
	stores := make([]*mysql.Store, len(urls))
	for i, u := range urls {
		stores[i] = open(t, u+"?wsrep_retry_autocommit=0", quiet)
	}
	if err := stores[0].Migrate(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	appendRace(t, stores)
}

// appendRace has 8 goroutines, spread over stores, write the same journal
// entry at once, many times: each time exactly one wins and the others get
// errs.ErrAlreadyExists, and the entry is the winner's.
func appendRace(t *testing.T, stores []*mysql.Store) {
	ctx := ctxT(t)
	const shard, owner, racers, rounds = "default/1", "me:1", 8, 25
	s := stores[0]
	if _, _, _, err := s.StartExecution(ctx, execOf("wf1"), store.StartContext{}, startOf("wf1"), nil); err != nil {
		t.Fatal(err)
	}
	mode, _, err := s.ResolveLockMode(ctx, store.LockAuto)
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.NewLocker(ctx, mode, owner)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	epoch, ok, err := l.Acquire(ctx, shard, time.Minute)
	if err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	f := store.Fence{Owner: owner, Epoch: epoch}
	for seq := 0; seq < rounds; seq++ {
		start := make(chan struct{})
		errc := make([]error, racers)
		var wg sync.WaitGroup
		for g := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errc[g] = store.AppendJournal(ctx, stores[g%len(stores)], shard, f, store.JournalEntry{
					ExecutionID: "wf1", Seq: seq, Kind: store.JournalStep, Name: "step",
					Result: []byte(fmt.Sprint(g)), Attempts: 1, Runner: owner})
			}()
		}
		close(start)
		wg.Wait()
		winner := -1
		for g, err := range errc {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("seq %d: goroutines %d and %d both wrote", seq, winner, g)
			case err == nil:
				winner = g
			case !errors.Is(err, errs.ErrAlreadyExists):
				t.Fatalf("seq %d: goroutine %d: %v", seq, g, err)
			}
		}
		if winner < 0 {
			t.Fatalf("seq %d: nobody wrote", seq)
		}
		j, err := stores[len(stores)-1].Journal(ctx, "wf1")
		if err != nil {
			t.Fatal(err)
		}
		if len(j) != seq+1 || string(j[seq].Result) != fmt.Sprint(winner) {
			t.Fatalf("seq %d: journal %+v, winner %d", seq, j, winner)
		}
	}
	var retries int64
	for _, s := range stores {
		retries += s.RetryCount()
	}
	t.Logf("%d rounds of %d racers, %d retries after 1213/1205", rounds, racers, retries)
}

func TestStartAndSignalRace(t *testing.T) {
	s, _ := fresh(t, "mywf_race2", quiet)
	startRace(t, []*mysql.Store{s})
}

// On Galera the conflicting transactions run on different nodes: the loser
// fails certification at COMMIT (1213) and its re-run finds the winner's row.
func TestStartAndSignalRaceGalera(t *testing.T) {
	urls := testdb.Galera(t)
	stores := make([]*mysql.Store, len(urls))
	for i, u := range urls {
		stores[i] = open(t, u, quiet)
	}
	if err := stores[0].Migrate(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	startRace(t, stores)
}

// startRace has 8 goroutines, spread over stores, start the same run and
// then send it the same signal: one start creates it and enqueues the one
// start message, one signal is stored with the one wake.
func startRace(t *testing.T, stores []*mysql.Store) {
	ctx := ctxT(t)
	const racers, rounds = 8, 10
	race := func(fn func(g int, s *mysql.Store) (bool, error)) int {
		start := make(chan struct{})
		won := make([]bool, racers)
		errc := make([]error, racers)
		var wg sync.WaitGroup
		for g := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				won[g], errc[g] = fn(g, stores[g%len(stores)])
			}()
		}
		close(start)
		wg.Wait()
		n := 0
		for g := range racers {
			if errc[g] != nil {
				t.Fatalf("goroutine %d: %v", g, errc[g])
			}
			if won[g] {
				n++
			}
		}
		return n
	}
	for r := range rounds {
		id := fmt.Sprint("race-", r)
		created := race(func(g int, s *mysql.Store) (bool, error) {
			x := execOf(id)
			x.Input = []byte(fmt.Sprint(g))
			got, existing, res, err := s.StartExecution(ctx, x, store.StartContext{}, startOf(id), nil)
			if err == nil && existing == (res.ID != 0) {
				err = fmt.Errorf("existing=%v with message %d", existing, res.ID)
			}
			if err == nil && got.ID != id {
				err = fmt.Errorf("start returned %+v", got)
			}
			return !existing, err
		})
		sent := race(func(g int, s *mysql.Store) (bool, error) {
			return s.SendSignal(ctx, store.Signal{ExecutionID: id, Name: "go", Payload: []byte(fmt.Sprint(g))},
				&store.Message{Shard: "default/1", EntityType: "workflow/order", EntityID: id, Tag: "signal"})
		})
		msgs, err := stores[len(stores)-1].ListMessages(ctx, store.MessageFilter{EntityID: id})
		if err != nil {
			t.Fatal(err)
		}
		if created != 1 || sent != 1 || len(msgs) != 2 {
			t.Fatalf("round %d: %d created, %d signals stored, messages %+v", r, created, sent, msgs)
		}
	}
	var retries int64
	for _, s := range stores {
		retries += s.RetryCount()
	}
	t.Logf("%d rounds of %d racers, %d retries after 1213/1205", rounds, racers, retries)
}

func execOf(id string) store.Execution {
	return store.Execution{ID: id, Name: "order", Shard: "default/1", Input: []byte(`{}`)}
}

func startOf(id string) *store.Message {
	return &store.Message{Shard: "default/1", EntityType: "workflow/order", EntityID: id, Tag: "start", DedupeKey: "wf-start:" + id}
}

// The paths around duplicates, with and without multi statements: a start
// whose message dedupe key is taken, a duplicate start, wakes whose dedupe
// key is taken. None may leave the (only) pooled connection in a
// transaction.
func TestWorkflowDuplicates(t *testing.T) {
	for _, multi := range []bool{true, false} {
		t.Run(fmt.Sprint("multiStatements=", multi), func(t *testing.T) {
			ctx := ctxT(t)
			url := testdb.MariaDB(t, "mywf_dup")
			if !multi {
				url += "?multiStatements=false"
			}
			s := freshURL(t, url, oneConnEach(multi))
			idle := func(step string) {
				t.Helper()
				idleConns(t, s, step)
			}

			// the start message's dedupe key is taken: the run is created,
			// the start answers like a duplicate Enqueue
			earlier, err := s.Enqueue(ctx, startOf("a"), nil)
			if err != nil {
				t.Fatal(err)
			}
			x, existing, res, err := s.StartExecution(ctx, execOf("a"), store.StartContext{Source: "api"}, startOf("a"), nil)
			if err != nil || existing || !res.Duplicate || res.ID != earlier.ID || x.CreatedAt.IsZero() {
				t.Fatalf("start with a taken dedupe key: %+v existing=%v %+v %v", x, existing, res, err)
			}
			idle("a start whose dedupe key is taken")
			if sc, err := s.GetStartContext(ctx, "a"); err != nil || sc.Source != "api" {
				t.Fatalf("start context: %+v %v", sc, err)
			}

			// a new run by the shard owner: its start comes back claimed
			l, err := s.NewLocker(ctx, store.LockAdvisory, "me:1")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			epoch, ok, err := l.Acquire(ctx, "default/1", time.Minute)
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			m := startOf("b")
			x, existing, res, err = s.StartExecution(ctx, execOf("b"), store.StartContext{}, m, &store.EnqueueClaim{Owner: "me:1", Epoch: epoch, ClaimTTL: time.Minute})
			if err != nil || existing || res.Duplicate || res.ClaimedEpoch != epoch || m.ID != res.ID || m.State != store.StateClaimed || m.CreatedAt.IsZero() {
				t.Fatalf("claimed start: %+v existing=%v %+v %+v %v", x, existing, res, m, err)
			}
			got, err := s.GetMessage(ctx, res.ID)
			if err != nil || got.State != store.StateClaimed || got.ClaimedBy != "me:1" || got.ClaimEpoch != epoch {
				t.Fatalf("claimed start message: %+v %v", got, err)
			}
			// claimed, with a taken dedupe key
			earlier, err = s.Enqueue(ctx, startOf("c"), nil)
			if err != nil {
				t.Fatal(err)
			}
			x, existing, res, err = s.StartExecution(ctx, execOf("c"), store.StartContext{}, startOf("c"), &store.EnqueueClaim{Owner: "me:1", Epoch: epoch, ClaimTTL: time.Minute})
			if err != nil || existing || !res.Duplicate || res.ID != earlier.ID || res.ClaimedEpoch != 0 || x.Status != store.ExecRunning {
				t.Fatalf("claimed start with a taken dedupe key: %+v existing=%v %+v %v", x, existing, res, err)
			}
			idle("a claimed start whose dedupe key is taken")

			// the same start again
			x, existing, res, err = s.StartExecution(ctx, execOf("b"), store.StartContext{}, startOf("b"), nil)
			if err != nil || !existing || res.ID != 0 || x.ID != "b" || x.Status != store.ExecRunning {
				t.Fatalf("duplicate start: %+v existing=%v %+v %v", x, existing, res, err)
			}
			idle("a duplicate start")

			// wakes: filled in like Enqueue does; a taken dedupe key still
			// stores the signal and the cancel, without a second message
			wake := &store.Message{Shard: "default/1", EntityType: "workflow/order", EntityID: "b", Tag: "wake", DedupeKey: "wake:b"}
			if ok, err := s.SendSignal(ctx, store.Signal{ExecutionID: "b", Name: "s1"}, wake); err != nil || !ok || wake.ID <= 0 || wake.State != store.StatePending || wake.CreatedAt.IsZero() {
				t.Fatalf("signal: %v %v %+v", ok, err, wake)
			}
			if ok, err := s.SendSignal(ctx, store.Signal{ExecutionID: "b", Name: "s1"}, wake); err != nil || ok {
				t.Fatalf("second signal of a name: %v %v", ok, err)
			}
			idle("a signal name that exists")
			if ok, err := s.SendSignal(ctx, store.Signal{ExecutionID: "b", Name: "s2", Payload: []byte("2")}, wake); err != nil || !ok {
				t.Fatalf("signal with a taken wake key: %v %v", ok, err)
			}
			idle("a wake whose dedupe key is taken")
			if sig, err := s.GetSignal(ctx, "b", "s2"); err != nil || sig == nil || string(sig.Payload) != "2" {
				t.Fatalf("signal s2: %+v %v", sig, err)
			}
			if _, err := s.SendSignal(ctx, store.Signal{ExecutionID: "nope", Name: "s1"}, wake); !errors.Is(err, errs.ErrNotFound) {
				t.Fatalf("signal to an unknown run: %v", err)
			}
			if ok, err := s.RequestCancel(ctx, "b", wake); err != nil || !ok {
				t.Fatalf("cancel with a taken wake key: %v %v", ok, err)
			}
			idle("a cancel whose wake key is taken")
			cw := &store.Message{Shard: "default/1", EntityType: "workflow/order", EntityID: "b", Tag: "cancel"}
			if ok, err := s.RequestCancel(ctx, "b", cw); err != nil || !ok || cw.ID <= 0 || cw.State != store.StatePending {
				t.Fatalf("cancel: %v %v %+v", ok, err, cw)
			}
			if x, err := s.GetExecution(ctx, "b"); err != nil || !x.CancelRequested {
				t.Fatalf("cancel requested: %+v %v", x, err)
			}
			msgs, err := s.ListMessages(ctx, store.MessageFilter{EntityID: "b"})
			if err != nil || len(msgs) != 3 {
				t.Fatalf("start, one wake, one cancel: %+v %v", msgs, err)
			}

			// fenced writes that change nothing
			f := store.Fence{Owner: "me:1", Epoch: epoch}
			if err := store.UpdateExecution(ctx, s, store.ExecutionUpdate{ID: "nope", Shard: "default/1", Fence: f, Status: store.ExecSuspended}); !errors.Is(err, errs.ErrNotFound) {
				t.Fatalf("update of an unknown run: %v", err)
			}
			if err := store.AppendJournal(ctx, s, "default/1", store.Fence{Owner: "me:1", Epoch: epoch + 1}, store.JournalEntry{ExecutionID: "b", Kind: store.JournalStep}); !errors.Is(err, errs.ErrFenced) {
				t.Fatalf("journal write at a later epoch: %v", err)
			}
			idle("the fenced writes")
		})
	}
}

// BenchmarkWorkflow3Step is what a 3-step workflow costs the store at least:
// its start (claimed at insert by the shard owner), three journal entries,
// the final update and the completion of the start message; with multi
// statements on (the start is one round trip, so is Complete) and off.
func BenchmarkWorkflow3Step(b *testing.B) {
	ctx := context.Background()
	_, url := fresh(b, "mybench_wf", quiet)
	stores := map[bool]*mysql.Store{true: open(b, url, quiet), false: open(b, url+"?multiStatements=false", quiet)}
	s := stores[true]
	l, err := s.NewLocker(ctx, store.LockAdvisory, "bench:1")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	epochs := map[string]int64{}
	for i := 0; i < 8; i++ {
		sh := fmt.Sprintf("default/%d", i)
		e, ok, err := l.Acquire(ctx, sh, time.Minute)
		if err != nil || !ok {
			b.Fatalf("acquire %s: %v %v", sh, ok, err)
		}
		epochs[sh] = e
	}
	var next atomic.Int64
	for _, multi := range []bool{true, false} {
		for _, gs := range []int{1, 8, 32} {
			benchWorkflow(b, fmt.Sprintf("multiStatements=%v/goroutines=%d", multi, gs), stores[multi], gs, epochs, &next)
		}
	}
}

func benchWorkflow(b *testing.B, name string, s *mysql.Store, gs int, epochs map[string]int64, next *atomic.Int64) {
	b.Run(name, func(b *testing.B) {
		// time spent in each call, summed over goroutines
		var tStart, tJournal, tUpdate, tComplete atomic.Int64
		timed := func(sum *atomic.Int64, fn func() error) error {
			t0 := time.Now()
			err := fn()
			sum.Add(int64(time.Since(t0)))
			return err
		}
		parallel(b, gs, func(ctx context.Context, g int) error {
			id := fmt.Sprintf("wf-%d", next.Add(1))
			sh := fmt.Sprintf("default/%d", g%8)
			f := store.Fence{Owner: "bench:1", Epoch: epochs[sh]}
			x := store.Execution{ID: id, Name: "bench", Shard: sh, Input: []byte(`{"n":1}`)}
			m := &store.Message{Shard: sh, EntityType: "workflow/bench", EntityID: id, Tag: "start", DedupeKey: "wf-start:" + id}
			var res store.EnqueueResult
			err := timed(&tStart, func() (err error) {
				_, _, res, err = s.StartExecution(ctx, x, store.StartContext{Source: "bench"}, m, &store.EnqueueClaim{Owner: f.Owner, Epoch: f.Epoch, ClaimTTL: time.Minute})
				return err
			})
			if err != nil {
				return err
			}
			for seq := range 3 {
				err := timed(&tJournal, func() error {
					return store.AppendJournal(ctx, s, sh, f, store.JournalEntry{ExecutionID: id, Seq: seq, Kind: store.JournalStep,
						Name: "step", Result: []byte(`{"ok":true}`), Attempts: 1, Runner: f.Owner, StartedAt: time.Now()})
				})
				if err != nil {
					return err
				}
			}
			err = timed(&tUpdate, func() error {
				return store.UpdateExecution(ctx, s, store.ExecutionUpdate{ID: id, Shard: sh, Fence: f, Status: store.ExecCompleted, Output: []byte(`3`), Runner: f.Owner})
			})
			if err != nil {
				return err
			}
			return timed(&tComplete, func() error {
				return s.Complete(ctx, store.Completion{MessageID: res.ID, Shard: sh, Fence: store.Fence{Owner: f.Owner, Epoch: res.ClaimedEpoch}})
			})
		})
		per := func(sum *atomic.Int64, calls int) float64 {
			return float64(sum.Load()) / float64(calls*b.N) / float64(time.Microsecond)
		}
		b.ReportMetric(per(&tStart, 1), "start-µs")
		b.ReportMetric(per(&tJournal, 3), "journal-µs")
		b.ReportMetric(per(&tUpdate, 1), "update-µs")
		b.ReportMetric(per(&tComplete, 1), "complete-µs")
	})
}

// BenchmarkWriteRuns is one runner's group commit: a WriteRuns call with a
// journal entry for each of n runs, with multi statements on (one round
// trip) and off (one per statement, plus BEGIN and COMMIT); and a run's
// finishing write (last entry, final state, its claimed start message).
func BenchmarkWriteRuns(b *testing.B) {
	ctx := context.Background()
	_, url := fresh(b, "mybench_runs", quiet)
	stores := map[bool]*mysql.Store{true: open(b, url, quiet), false: open(b, url+"?multiStatements=false", quiet)}
	s := stores[true]
	l, err := s.NewLocker(ctx, store.LockAdvisory, "bench:1")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	epoch, ok, err := l.Acquire(ctx, "default/1", time.Minute)
	if err != nil || !ok {
		b.Fatalf("acquire: %v %v", ok, err)
	}
	f := store.Fence{Owner: "bench:1", Epoch: epoch}
	const runs = 128
	for i := range runs {
		x := store.Execution{ID: fmt.Sprint("r", i), Name: "bench", Shard: "default/1"}
		if _, _, _, err := s.StartExecution(ctx, x, store.StartContext{}, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
	seq, fin := 0, 0
	for _, multi := range []bool{true, false} {
		for _, n := range []int{1, 16, runs} {
			b.Run(fmt.Sprintf("multiStatements=%v/writes=%d", multi, n), func(b *testing.B) {
				ws := make([]store.RunWrite, n)
				for range b.N {
					for i := range ws {
						ws[i] = store.RunWrite{Shard: "default/1", Fence: f, Entry: &store.JournalEntry{ExecutionID: fmt.Sprint("r", i),
							Seq: seq, Kind: store.JournalStep, Name: "step", Result: []byte(`{"ok":true}`), Attempts: 1, Runner: f.Owner}}
					}
					seq++
					out, err := stores[multi].WriteRuns(ctx, ws)
					if err != nil {
						b.Fatal(err)
					}
					for _, o := range out {
						if o != nil {
							b.Fatal(o)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/write")
			})
		}
		b.Run(fmt.Sprintf("multiStatements=%v/finish", multi), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				fin++
				id := fmt.Sprint("fin-", fin)
				x := store.Execution{ID: id, Name: "bench", Shard: "default/1"}
				m := &store.Message{Shard: "default/1", EntityType: "workflow/bench", EntityID: id, Tag: "start"}
				_, _, res, err := s.StartExecution(ctx, x, store.StartContext{}, m, &store.EnqueueClaim{Owner: f.Owner, Epoch: f.Epoch, ClaimTTL: time.Minute})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				out, err := stores[multi].WriteRuns(ctx, []store.RunWrite{{Shard: "default/1", Fence: f, Message: res.ID,
					Entry:  &store.JournalEntry{ExecutionID: id, Kind: store.JournalStep, Name: "step", Result: []byte(`{"ok":true}`), Attempts: 1},
					Update: &store.ExecutionUpdate{ID: id, Status: store.ExecCompleted, Output: []byte(`3`), Runner: f.Owner}}})
				if err == nil {
					err = out[0]
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
