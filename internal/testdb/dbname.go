// Test database names: one set per checkout, so two clones or worktrees
// testing at once on the same servers never drop each other's databases.

package testdb

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/config"
)

// maxName is the shortest identifier limit of the servers (PostgreSQL's
// NAMEDATALEN-1; MariaDB allows 64).
const maxName = 63

// DBName is the database a test named name gets: voltro_t_<name>_<tag>,
// where tag is derived from the checkout the test runs in (the directory
// holding the module's go.mod), or VOLTRO_TEST_DB_TAG when set. A name
// that would pass the servers' identifier limit is shortened with a hash
// of its tail, so two long names never meet.
func DBName(name string) string {
	n := "voltro_t_" + name + "_" + checkoutTag()
	if len(n) <= maxName {
		return n
	}
	sum := sha256.Sum256([]byte(n))
	return n[:maxName-9] + "_" + hex.EncodeToString(sum[:4])
}

// checkoutTag is six hex digits naming the checkout.
func checkoutTag() string {
	if tag := config.TestSetting(config.EnvTestDBTag); tag != "" {
		return tag
	}
	dir, err := os.Getwd()
	if err != nil {
		return "x"
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			dir = d
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	sum := sha256.Sum256([]byte(dir))
	return hex.EncodeToString(sum[:3])
}

// dropOnPass drops the test's database with stmt when t ends, unless t
// failed (its database is then kept to look at). It runs after every
// cleanup registered later, so the test's own pools are closed by then.
// A drop that fails is logged, not fatal: the next run drops it first.
func dropOnPass(t testing.TB, driver, dsn, stmt string) {
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		db, err := sql.Open(driver, dsn)
		if err != nil {
			t.Logf("testdb: %v", err)
			return
		}
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Logf("testdb: %s: %v", stmt, err)
		}
	})
}
