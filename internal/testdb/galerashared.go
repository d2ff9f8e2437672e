// The shared Galera cluster of a test binary (Galera, StopGalera), a
// private one per test (NewGalera), and the per-test databases on them.

package testdb

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/voltro/voltro/internal/config"
)

// --- the shared cluster of a test binary ---

var shared struct {
	mu      sync.Mutex
	cluster *GaleraCluster // started by this binary, nil when taken from the env
	urls    []string       // node URLs without a database
	err     error
}

// Galera returns three mariadb:// URLs, one per node of a real Galera
// cluster, naming a database created afresh on every call. The database is
// voltro_t_galera_<package dir>_<hash>, so packages sharing one cluster in
// parallel never drop each other's database.
//
// When VOLTRO_TEST_GALERA_URLS is set (scripts/test sets it), that cluster is
// used. Otherwise the first call starts a cluster for this test binary (about
// 7 s); call StopGalera from TestMain after m.Run to remove it cleanly. If
// you don't, the kernel kills the nodes when the binary exits and the next
// start reclaims the directory. Never Kill nodes of this shared cluster: use
// NewGalera for failover tests.
func Galera(t testing.TB) []string {
	t.Helper()
	return GaleraDB(t, "")
}

// GaleraDB is Galera on a database of its own for each suffix (the
// package's name with suffix appended): a test that holds two databases at
// once asks for two suffixes.
func GaleraDB(t testing.TB, suffix string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	urls, err := sharedGalera(ctx)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	name := galeraDBName() + suffix
	var dsns []string
	out := make([]string, len(urls))
	for i, u := range urls {
		dsn, base, err := galeraURLToDSN(u)
		if err != nil {
			t.Fatalf("testdb: %s: %v", GaleraURLsEnv, err)
		}
		dsns = append(dsns, dsn)
		out[i] = base + name
	}
	if err := galeraCreateDatabase(ctx, dsns, name); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	return out
}

// StopGalera stops the cluster that Galera started for this test binary, if
// it started one. Call it from TestMain after m.Run.
func StopGalera() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.cluster != nil {
		shared.cluster.Stop()
		shared.cluster = nil
		shared.urls = nil
	}
}

// NewGalera starts a private cluster for one test (failover tests kill and
// restart its nodes), with database voltro_t_galera created. It is stopped
// by t.Cleanup.
func NewGalera(t testing.TB) *GaleraCluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := StartGalera(ctx, GaleraOptions{Database: "voltro_t_galera", BasePort: galeraDefaultBase + galeraBandStep})
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(c.Stop)
	return c
}

func sharedGalera(ctx context.Context) ([]string, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.urls != nil {
		return shared.urls, nil
	}
	if env := strings.TrimSpace(config.TestSetting(GaleraURLsEnv)); env != "" {
		var urls []string
		for _, u := range strings.Split(env, ",") {
			if u = strings.TrimSpace(u); u != "" {
				urls = append(urls, u)
			}
		}
		if len(urls) == 0 {
			return nil, fmt.Errorf("%s is set but names no URL", GaleraURLsEnv)
		}
		shared.urls = urls
		return urls, nil
	}
	if shared.err != nil {
		return nil, shared.err
	}
	c, err := StartGalera(ctx, GaleraOptions{})
	if err != nil {
		shared.err = err
		return nil, err
	}
	shared.cluster, shared.urls = c, c.URLs()
	return shared.urls, nil
}

// galeraDBName names this package's database: go test runs each test binary
// in its package directory.
func galeraDBName() string {
	wd, err := os.Getwd()
	if err != nil {
		wd = os.Args[0]
	}
	sum := sha256.Sum256([]byte(wd))
	base := regexp.MustCompile(`[^a-z0-9_]`).ReplaceAllString(strings.ToLower(filepath.Base(wd)), "_")
	if len(base) > 24 { // room for GaleraDB's suffix within 64
		base = base[:24]
	}
	return "voltro_t_galera_" + base + "_" + hex.EncodeToString(sum[:3])
}

// galeraURLToDSN turns mariadb://user[:pass]@host:port[/db] into an admin DSN
// (no database) and the URL prefix to which a database name is appended.
func galeraURLToDSN(raw string) (dsn, prefix string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", fmt.Errorf("parse %q: %w", raw, err)
	}
	if u.Scheme != "mariadb" && u.Scheme != "mysql" {
		return "", "", fmt.Errorf("%q: want a mariadb:// URL", raw)
	}
	pass, _ := u.User.Password()
	prefix = fmt.Sprintf("%s://%s@%s/", u.Scheme, u.User.String(), u.Host)
	return galeraDSN(u.User.Username(), pass, u.Host, ""), prefix, nil
}

func galeraDSN(userName, pass, hostport, db string) string {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = userName, pass, "tcp", hostport, db
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = 5*time.Second, 30*time.Second, 30*time.Second
	return cfg.FormatDSN()
}

func galeraCreateDatabase(ctx context.Context, dsns []string, name string) error {
	dbs := make([]*sql.DB, len(dsns))
	for i, dsn := range dsns {
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			return fmt.Errorf("galera: %w", err)
		}
		defer db.Close()
		dbs[i] = db
	}
	// DDL replicates in total order but is applied asynchronously on the
	// other nodes. The name is reused by every call in a package, so first
	// wait until each node has applied the DROP: seeing the name before
	// that could be the previous incarnation, about to vanish.
	visible := func(want bool) error {
		for i, db := range dbs[1:] {
			err := waitFor(ctx, 30*time.Second, func() (bool, error) {
				var n int
				err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", name).Scan(&n)
				return (n == 1) == want, err
			})
			if err != nil {
				return fmt.Errorf("galera: database %s still %s on node %d: %w", name, map[bool]string{true: "missing", false: "present"}[want], i+1, err)
			}
		}
		return nil
	}
	if _, err := dbs[0].ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
		return fmt.Errorf("galera: drop %s (is the cluster running? scripts/test starts it): %w", name, err)
	}
	if err := visible(false); err != nil {
		return err
	}
	if _, err := dbs[0].ExecContext(ctx, "CREATE DATABASE `"+name+"`"); err != nil {
		return fmt.Errorf("galera: create %s: %w", name, err)
	}
	return visible(true)
}
