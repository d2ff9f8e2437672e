// The store on a real 3-node Galera cluster: the conformance suite in row
// mode with handles on different nodes, and a lease race across nodes that
// checks no shard ever has two holders at once.
package mysql_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/mysql"
	"github.com/voltro/voltro/internal/testdb"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testdb.StopGalera()
	os.Exit(code)
}

// Three processes, one per node, migrate a fresh database at once: GET_LOCK
// is node-local, so the lease row in voltro_migration_lock does the work.
func TestGaleraMigrateConcurrently(t *testing.T) {
	migrateConcurrently(t, testdb.Galera(t))
}

// holding is one locker's belief that it holds a shard: from the return of
// the Acquire that took it until it sent a release, learned otherwise or, at
// the latest, ttl after the start of its last successful acquire/refresh
// (the lease the database granted cannot end earlier than that: it runs ttl
// from the database clock when the statement ran, on the clock all three
// nodes of this one-host cluster and the test share).
type holding struct {
	owner      string
	epoch      int64
	start, end time.Time
}

// wall reads the clock the database's lease expiry is computed from: the
// wall clock, without Go's monotonic reading, so a wall-clock adjustment
// during the race cannot pass for an overlap (or hide one).
func wall() time.Time { return time.Now().Round(0) }

type acquisition struct {
	shard, owner string
	epoch        int64
}

func TestGaleraLeaseRace(t *testing.T) {
	const (
		nShards  = 20
		ttl      = 700 * time.Millisecond
		duration = 10 * time.Second
		period   = 150 * time.Millisecond
	)
	urls := testdb.Galera(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stores := make([]*mysql.Store, 3)
	for i := range stores {
		// Galera re-runs a conflicting autocommit statement once by itself
		// (wsrep_retry_autocommit=1); off here, every certification conflict
		// reaches the store's own retry helper as 1213.
		stores[i] = open(t, urls[i]+"?wsrep_retry_autocommit=0", quiet)
	}
	if err := stores[0].Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	shards := make([]string, nShards)
	for i := range shards {
		shards[i] = fmt.Sprintf("race/%d", i)
	}

	var mu sync.Mutex
	var holdings = map[string][]holding{}
	var acquisitions []acquisition
	var failures []string
	deadline := time.Now().Add(duration)
	var wg sync.WaitGroup
	for i, s := range stores {
		owner := fmt.Sprintf("node%d:34000", i)
		l, err := s.NewLocker(ctx, store.LockRow, owner)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer l.Close()
			rng := rand.New(rand.NewPCG(uint64(i), 42))
			held := map[string]int64{}
			beliefs := map[string]*holding{}
			validUntil := func(from time.Time) time.Time { return from.Add(ttl) }
			closeHolding := func(sh string, at time.Time) {
				h := beliefs[sh]
				if h == nil {
					return
				}
				if at.Before(h.end) {
					h.end = at
				}
				mu.Lock()
				holdings[sh] = append(holdings[sh], *h)
				mu.Unlock()
				delete(beliefs, sh)
				delete(held, sh)
			}
			for time.Now().Before(deadline) {
				// now and then stall past the lease, as a paused process would
				if rng.IntN(15) == 0 {
					time.Sleep(ttl + 200*time.Millisecond)
				}
				if len(held) > 0 {
					sent := wall()
					lost, err := l.Refresh(ctx, held, ttl)
					if err != nil {
						mu.Lock()
						failures = append(failures, fmt.Sprintf("%s refresh: %v", owner, err))
						mu.Unlock()
						return
					}
					now := wall()
					for _, sh := range lost {
						closeHolding(sh, now)
					}
					for sh := range held {
						h := beliefs[sh]
						if h.end.Before(sent) {
							// the lease may have lapsed before this refresh
							// extended it: the belief ended there
							closeHolding(sh, h.end)
							continue
						}
						h.end = validUntil(sent)
					}
				}
				// every locker walks the shards in the same order, in rounds
				// aligned to the clock: free shards are fought over at once
				round := time.Now().UnixNano() / int64(period)
				order := rand.New(rand.NewPCG(uint64(round), 7)).Perm(nShards)
				for _, idx := range order {
					sh := shards[idx]
					if epoch, ok := held[sh]; ok {
						if rng.IntN(25) == 0 {
							// A holder gives the shard up when it sends the
							// release, as the runner does (it forgets the
							// shard, then releases): the row is free for
							// others once the release commits, which is
							// before Release returns here.
							sent := wall()
							closeHolding(sh, sent)
							if err := l.Release(ctx, sh, epoch); err != nil {
								mu.Lock()
								failures = append(failures, fmt.Sprintf("%s release %s: %v", owner, sh, err))
								mu.Unlock()
								return
							}
						}
						continue
					}
					sent := wall()
					epoch, ok, err := l.Acquire(ctx, sh, ttl)
					if err != nil {
						mu.Lock()
						failures = append(failures, fmt.Sprintf("%s acquire %s: %v", owner, sh, err))
						mu.Unlock()
						return
					}
					if !ok {
						continue
					}
					held[sh] = epoch
					beliefs[sh] = &holding{owner: owner, epoch: epoch, start: wall(), end: validUntil(sent)}
					mu.Lock()
					acquisitions = append(acquisitions, acquisition{sh, owner, epoch})
					mu.Unlock()
				}
				now := time.Now()
				time.Sleep(now.Truncate(period).Add(period).Sub(now))
			}
			now := wall()
			for sh := range beliefs {
				closeHolding(sh, now)
			}
		}()
	}

	// the ledger, sampled from a fourth session while the race runs
	var samples [][]store.ShardLock
	sampler := open(t, urls[0], quiet)
	for time.Now().Before(deadline) {
		ls, err := sampler.ShardLocks(ctx)
		if err != nil {
			t.Fatalf("ledger sample: %v", err)
		}
		samples = append(samples, ls)
		time.Sleep(100 * time.Millisecond)
	}
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}

	// each (shard, epoch) was granted to exactly one owner
	byEpoch := map[string]string{}
	for _, a := range acquisitions {
		k := fmt.Sprintf("%s@%d", a.shard, a.epoch)
		if prev, ok := byEpoch[k]; ok {
			t.Errorf("epoch %s granted twice: to %s and %s", k, prev, a.owner)
		}
		byEpoch[k] = a.owner
	}
	// the ledger agrees with the lockers, and its epochs only grow
	last := map[string]int64{}
	for _, ls := range samples {
		for _, l := range ls {
			if l.Epoch < last[l.Shard] {
				t.Errorf("ledger epoch of %s went back from %d to %d", l.Shard, last[l.Shard], l.Epoch)
			}
			last[l.Shard] = l.Epoch
			if l.Owner == "" {
				continue
			}
			if o, ok := byEpoch[fmt.Sprintf("%s@%d", l.Shard, l.Epoch)]; ok && o != l.Owner {
				t.Errorf("ledger names %s for %s@%d, the locker that got it was %s", l.Owner, l.Shard, l.Epoch, o)
			}
		}
	}
	// no two owners believed they held one shard at the same time
	handovers := 0
	for sh, hs := range holdings {
		sort.Slice(hs, func(i, j int) bool { return hs[i].start.Before(hs[j].start) })
		for i := 1; i < len(hs); i++ {
			prev, cur := hs[i-1], hs[i]
			if prev.owner != cur.owner {
				handovers++
			}
			if cur.start.Before(prev.end) && prev.owner != cur.owner {
				t.Errorf("%s: %s (epoch %d) until %s overlaps %s (epoch %d) from %s", sh,
					prev.owner, prev.epoch, prev.end.Format("15:04:05.000000"),
					cur.owner, cur.epoch, cur.start.Format("15:04:05.000000"))
			}
			if cur.epoch <= prev.epoch {
				t.Errorf("%s: epoch %d after %d", sh, cur.epoch, prev.epoch)
			}
		}
	}
	var retries int64
	for _, s := range stores {
		retries += s.RetryCount()
	}
	t.Logf("%d acquisitions, %d handovers between owners, %d ledger samples, %d retries after 1213/1205",
		len(acquisitions), handovers, len(samples), retries)
	if handovers == 0 {
		t.Errorf("no shard changed hands: the race did not race")
	}
}
