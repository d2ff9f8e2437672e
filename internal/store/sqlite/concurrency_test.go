// Concurrency tests: several handles on one file, migrating and writing at
// once, never surface SQLITE_BUSY.

package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/sqlite"
)

func TestConcurrentMigrate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "race.db")
	ctx := context.Background()
	var stores []*sqlite.Store
	for i := 0; i < 3; i++ {
		s, err := sqlite.Open(ctx, path, sqlite.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		stores = append(stores, s)
	}
	var wg sync.WaitGroup
	for _, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Migrate(ctx); err != nil {
				t.Errorf("concurrent migrate: %v", err)
			}
		}()
	}
	wg.Wait()
	got, err := stores[0].AppliedMigrations(ctx)
	if err != nil || len(got) == 0 {
		t.Fatalf("applied %v %v", got, err)
	}
}

// TestMixedWritersNoBusy runs store writes on two handles, a locker, and
// application transactions on DB() against one file at the same time.
func TestMixedWritersNoBusy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mixed.db")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s1 := openTest(t, path)
	s2 := openTest(t, path)
	if _, err := s1.DB().ExecContext(ctx, `CREATE TABLE app_counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := s1.DB().ExecContext(ctx, `INSERT INTO app_counter VALUES (1, 0)`); err != nil {
		t.Fatal(err)
	}
	l, err := s1.NewLocker(ctx, store.LockRow, "w:1")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	deadline := time.Now().Add(700 * time.Millisecond)
	var wg sync.WaitGroup
	run := func(name string, fn func(i int) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				if err := fn(i); err != nil {
					t.Errorf("%s: %v", name, err)
					return
				}
			}
		}()
	}
	for n, s := range []*sqlite.Store{s1, s2} {
		run(fmt.Sprint("enqueue ", n), func(i int) error {
			_, err := s.Enqueue(ctx, &store.Message{Shard: fmt.Sprintf("g/%d", i%4), EntityType: "e", EntityID: fmt.Sprint(i)}, nil)
			return err
		})
	}
	run("app tx", func(int) error {
		tx, err := s2.DB().BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT n FROM app_counter WHERE id = 1`).Scan(&n); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE app_counter SET n = ? WHERE id = 1`, n+1); err != nil {
			return err
		}
		return tx.Commit()
	})
	run("locker", func(i int) error {
		_, _, err := l.Acquire(ctx, fmt.Sprintf("g/%d", i%4), time.Minute)
		return err
	})
	run("claim", func(int) error {
		_, err := s2.Claim(ctx, store.ClaimRequest{Owner: "w:1", Types: []string{"e"}, Shards: []string{"g/0", "g/1", "g/2", "g/3"}, Limit: 5, ClaimTTL: time.Minute})
		return err
	})
	wg.Wait()
}
