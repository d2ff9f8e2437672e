package runner

// Tests of the faults between "crashed" and "healthy" on the real
// databases: a frozen peer (stale heartbeat, session and locks still open)
// is fenced through the database; a refusal to fence is reported; a second
// live process on one address takes nothing; a dead suspect gets no shards
// back while its row stands still; long-silent rows are pruned.

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/mysql"
	"github.com/voltro/voltro/internal/store/postgres"
	"github.com/voltro/voltro/internal/testdb"
	"github.com/voltro/voltro/internal/testwait"
)

// freezeGhost registers addr, takes every shard with its advisory locker
// and then never calls it again: a process stopped with SIGSTOP.
func freezeGhost(t *testing.T, d store.Driver, addr string) (store.Locker, map[string]int64) {
	t.Helper()
	l := registerGhost(t, d, addr)
	held := map[string]int64{}
	for i := 0; i < testShards; i++ {
		sh := fmt.Sprintf("default/%d", i)
		e, ok, err := l.Acquire(context.Background(), sh, time.Minute)
		if err != nil || !ok {
			t.Fatalf("ghost acquire %s: %v %v", sh, ok, err)
		}
		held[sh] = e
	}
	return l, held
}

func TestFrozenPeerIsFencedThroughTheDatabase(t *testing.T) {
	for name, open := range presenceStores(t) {
		t.Run(name, func(t *testing.T) {
			d := open(t)
			ghost, epochs := freezeGhost(t, d, "frozen:1")
			var logs logLines
			hb := 300 * time.Millisecond
			frozenAt := time.Now()
			r := startRunnerLogging(t, d, store.LockAdvisory, "live:1", hb, &logs)
			testwait.For(t, r.expiry()+5*time.Second, "the live runner holds every shard", func() bool { return len(r.Held()) == testShards })
			took := time.Since(frozenAt)
			if !strings.Contains(logs.String(), "ended its session") {
				t.Fatalf("the shards moved without the frozen session being ended; log:\n%s", logs.String())
			}
			for sh, e := range r.Held() {
				if e <= epochs[sh] {
					t.Fatalf("shard %s taken at epoch %d, not above the frozen owner's %d", sh, e, epochs[sh])
				}
			}
			// The frozen process wakes: its session is gone.
			err := ghost.Heartbeat(context.Background(), "frozen:1")
			if err == nil {
				t.Fatal("the frozen runner's lock session still works after it was fenced")
			}
			// The takeover is one line at Info naming whom the shards came
			// from, not a line per shard.
			var moves []string
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, "shard acquired") || strings.Contains(l, "shards acquired") {
					moves = append(moves, l)
				}
			}
			if len(moves) != 1 || !strings.Contains(moves[0], "level=INFO") || !strings.Contains(moves[0], "frozen:1 (30)") {
				t.Fatalf("want one Info line for the move from frozen:1 (30 shards), got %d:\n%s", len(moves), strings.Join(moves, "\n"))
			}
			if st := r.Status(); st.Fences == 0 || len(st.FenceErrors) != 0 {
				t.Fatalf("status: fences %d, errors %v", st.Fences, st.FenceErrors)
			}
			t.Logf("frozen peer's %d shards taken %s after it stopped (heartbeat %s, expiry %s)", testShards, took.Round(time.Millisecond), hb, r.expiry())
		})
	}
}

// A frozen peer whose session belongs to another database user that this
// runner may not end: the refusal is in the log and the status, with the
// grant that would fix it, on PostgreSQL (42501) and MariaDB (1095).
func TestFenceRefusedIsReported(t *testing.T) {
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cases := []struct {
		name, url, admin, driver, grant string
		users                           func(db *sql.DB, user, database string) error
		open                            func(url string) (store.Driver, error)
	}{
		{
			name: "postgres", url: testdb.Postgres(t, "runner_fence_refused"), admin: "postgres@", driver: "pgx", grant: "pg_signal_backend",
			users: func(db *sql.DB, user, _ string) error {
				for _, q := range []string{
					`DO $$ BEGIN CREATE ROLE %s LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$`,
					"GRANT ALL ON SCHEMA public TO %s", "GRANT ALL ON ALL TABLES IN SCHEMA public TO %s", "GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO %s",
				} {
					if _, err := db.ExecContext(ctx, fmt.Sprintf(q, user)); err != nil {
						return err
					}
				}
				return nil
			},
			open: func(url string) (store.Driver, error) {
				return postgres.Open(ctx, url, postgres.Options{Logger: quiet})
			},
		},
		{
			name: "mariadb", url: testdb.MariaDB(t, "runner_fence_refused"), admin: "root@", driver: "mysql", grant: "CONNECTION ADMIN",
			users: func(db *sql.DB, user, database string) error {
				for _, q := range []string{"CREATE USER IF NOT EXISTS '%s'@'%%'", "GRANT ALL ON `" + database + "`.* TO '%s'@'%%'"} {
					if _, err := db.ExecContext(ctx, fmt.Sprintf(q, user)); err != nil {
						return err
					}
				}
				return nil
			},
			open: func(url string) (store.Driver, error) { return mysql.Open(ctx, url, mysql.Options{Logger: quiet}) },
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := c.open(c.url)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			_ = s.Close()
			dsn := c.url
			if c.driver == "mysql" {
				dsn = testdb.MariaDBAdminDSN()
			}
			admin, err := sql.Open(c.driver, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer admin.Close()
			database := c.url[strings.LastIndex(c.url, "/")+1:]
			database, _, _ = strings.Cut(database, "?")
			for _, u := range []string{"voltro_fence_a", "voltro_fence_b"} {
				if err := c.users(admin, u, database); err != nil {
					t.Fatal(err)
				}
			}
			as := func(user string) store.Driver {
				s, err := c.open(strings.Replace(c.url, c.admin, user+"@", 1))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				return s
			}
			freezeGhost(t, as("voltro_fence_b"), "frozen:1")
			var logs logLines
			r := startRunnerLogging(t, as("voltro_fence_a"), store.LockAdvisory, "live:1", 200*time.Millisecond, &logs)
			testwait.For(t, r.expiry()+5*time.Second, "the refusal in the status", func() bool { return len(r.Status().FenceErrors) > 0 })
			why := r.Status().FenceErrors["frozen:1"]
			if !strings.Contains(why, c.grant) || !strings.Contains(logs.String(), "could not be ended") {
				t.Fatalf("the refusal must name the fix (%s): %q; log:\n%s", c.grant, why, logs.String())
			}
			if n := len(r.Held()); n != 0 {
				t.Fatalf("the live runner took %d shards whose locks the frozen session still holds", n)
			}
		})
	}
}

// Two live processes with one address: the second takes no shards and says
// why; when the first dies the second takes over without a grace period.
func TestSecondLiveProcessOnAnAddressIsRefused(t *testing.T) {
	for name, open := range presenceStores(t) {
		for _, mode := range []store.LockMode{store.LockAdvisory, store.LockRow} {
			t.Run(name+"/"+string(mode), func(t *testing.T) {
				d := open(t)
				hb := 300 * time.Millisecond
				first := startRunner(t, d, mode, "same:1", hb)
				testwait.For(t, 10*time.Second, "the first process holds every shard", func() bool { return len(first.Held()) == testShards })
				second := startRunner(t, d, mode, "same:1", hb)
				testwait.For(t, 5*time.Second, "the second process says why it is out", func() bool { return second.Status().Refused != "" })
				deadline := time.Now().Add(2*hb + 4*second.opts.Tick)
				for time.Now().Before(deadline) {
					if n := len(second.Held()); n != 0 {
						t.Fatalf("a second live process at the same address holds %d shards: %s", n, second.Status().Refused)
					}
					if n := len(first.Held()); n != testShards {
						t.Fatalf("the first process lost shards to its duplicate: holds %d", n)
					}
					time.Sleep(20 * time.Millisecond)
				}
				first.Abandon() // killed
				died := time.Now()
				testwait.For(t, 3*first.expiry()+5*time.Second, "the second process takes over", func() bool { return len(second.Held()) == testShards })
				t.Logf("%s: the duplicate took over %s after the first died (refused meanwhile: %q)", mode, time.Since(died).Round(time.Millisecond), second.Status().Refused)
			})
		}
	}
}

// A peer that died holding nothing is suspected and its row goes stale in
// place: the survivor must never hand it shards back when the suspicion
// ages (the row's heartbeat has not moved, so it was not alive after all).
func TestDeadSuspectGetsNoShardsBack(t *testing.T) {
	for name, open := range presenceStores(t) {
		t.Run(name, func(t *testing.T) {
			d := open(t)
			_ = registerGhost(t, d, "ghost:1").Close()
			hb := 200 * time.Millisecond
			r := startRunner(t, d, store.LockAdvisory, "real:1", hb)
			testwait.For(t, 10*time.Second, "the real runner holds every shard", func() bool { return len(r.Held()) == testShards })
			until := time.Now().Add(3*r.expiry() + time.Second)
			for time.Now().Before(until) {
				if n := len(r.Held()); n != testShards {
					t.Fatalf("the survivor gave %d shards back towards a dead peer", testShards-n)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// The row of a runner silent for pruneAfter is removed; a fresh one stays.
func TestLongSilentRunnerRowsArePruned(t *testing.T) {
	for name, open := range presenceStores(t) {
		t.Run(name, func(t *testing.T) {
			d := open(t)
			ctx := context.Background()
			_ = registerGhost(t, d, "gone:1").Close()
			hb := 50 * time.Millisecond
			r := startRunner(t, d, store.LockAdvisory, "real:1", hb)
			testwait.For(t, r.pruneAfter()+5*time.Second, "the silent row is pruned", func() bool {
				rs, err := d.ListRunners(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, x := range rs {
					if x.Address == "gone:1" {
						return false
					}
				}
				return true
			})
			rs, _ := d.ListRunners(ctx)
			if len(rs) != 1 || rs[0].Address != "real:1" || r.Status().Pruned != 1 {
				t.Fatalf("after pruning: rows %+v, pruned %d", rs, r.Status().Pruned)
			}
		})
	}
}

// A process that was frozen and wakes after a newer process registered at
// its address (row mode has no session to tell it) steps out: it drops its
// shards and takes no further part.
func TestSupersededProcessStepsOut(t *testing.T) {
	for name, open := range presenceStores(t) {
		for _, mode := range []store.LockMode{store.LockAdvisory, store.LockRow} {
			t.Run(name+"/"+string(mode), func(t *testing.T) {
				d := open(t)
				old := startRunner(t, d, mode, "same:1", 200*time.Millisecond)
				testwait.For(t, 10*time.Second, "the old process holds every shard", func() bool { return len(old.Held()) == testShards })
				time.Sleep(300 * time.Millisecond) // a listing after its registration
				// What a newer process's registration leaves in the row.
				if err := d.RegisterRunner(context.Background(), store.Runner{Address: "same:1", ReplicaID: "newer", Groups: []string{"default"}, EntityTypes: []string{"test.entity"}, Healthy: true}); err != nil {
					t.Fatal(err)
				}
				testwait.For(t, 5*time.Second, "the old process steps out", func() bool {
					st := old.Status()
					return len(st.Held) == 0 && strings.Contains(st.Refused, "newer process")
				})
			})
		}
	}
}
