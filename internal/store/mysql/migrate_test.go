// Migrations: several processes booting at once against a fresh database.
package mysql_test

import (
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/voltro/voltro/internal/store/mysql"
	"github.com/voltro/voltro/internal/testdb"
)

func TestMigrateConcurrently(t *testing.T) {
	url := testdb.MariaDB(t, "mymigrate")
	migrateConcurrently(t, []string{url, url, url, url})
}

// migrateConcurrently opens and migrates one store per URL at once, then
// checks that every embedded file was applied exactly once.
func migrateConcurrently(t *testing.T, urls []string) {
	ctx := ctxT(t)
	var wg sync.WaitGroup
	errc := make(chan error, len(urls))
	for _, url := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := mysql.Open(ctx, url, quiet)
			if err != nil {
				errc <- err
				return
			}
			defer s.Close()
			errc <- s.Migrate(ctx)
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatalf("concurrent open+migrate: %v", err)
		}
	}

	files, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range files {
		if strings.HasSuffix(f.Name(), ".sql") {
			want = append(want, strings.TrimSuffix(f.Name(), ".sql"))
		}
	}
	s := open(t, urls[len(urls)-1], quiet)
	check := func() {
		t.Helper()
		rows, err := s.DB().QueryContext(ctx, "SELECT version FROM voltro_schema_migrations ORDER BY version")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var got []string
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			got = append(got, v)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("applied %v, want every embedded file once: %v", got, want)
		}
	}
	check()
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("re-migrate: %v", err)
	}
	check()
	for _, table := range []string{"voltro_cluster_config", "voltro_runners", "voltro_shard_locks", "voltro_messages", "voltro_replies"} {
		var n int
		if err := s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
			t.Fatalf("table %s: %v", table, err)
		}
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}
