package dburl

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/voltro/voltro/internal/errs"
)

const secret = "S3cr3tPw"

// badURLs each carry secret as the password and fail to parse or resolve.
var badURLs = []string{
	"mysql://root:" + secret + "@127.0.0.1:bad/db",
	"mariadb://root:" + secret + "@[::1/db",
	"mysql://root:" + secret + "/x@host/db",  // '/' in the password
	"mysql://root:" + secret + "%zz@host/db", // bad escape
	"postgres://app:" + secret + "@host:99999999999x/db",
	"postgres://app:" + secret + "@host/db?x=%zz",
	"postgresql://app:" + secret + "@ho st/db",
	"mysql:root:" + secret + "@host/db", // opaque: unknown scheme
	"pg://app:" + secret + "@host/db",   // unknown scheme
	"sqlite:?password=" + secret,
	"sqlserver://sa:" + secret + "@host:1433?database=app", // not supported
	"libsql://app.turso.io?authToken=" + secret,            // not supported
	"host=db password=" + secret + " user=u",               // a libpq keyword DSN
	"host=db password = '" + secret + " x' user=u",
	"host=db sslpassword=" + secret,
	"password='" + secret,
}

// TestUnsupportedDatabasesSaySo: SQL Server and remote Turso/libSQL URLs
// get an error naming the database as not supported and what to use
// instead, not "unknown scheme".
func TestUnsupportedDatabasesSaySo(t *testing.T) {
	for raw, want := range map[string]string{
		"sqlserver://sa:pw@host:1433?database=app": "SQL Server is not supported",
		"mssql://sa:pw@host/app":                   "SQL Server is not supported",
		"libsql://app-org.turso.io":                "remote Turso/libSQL is not supported",
		"turso://app-org.turso.io":                 "remote Turso/libSQL is not supported",
	} {
		_, err := Resolve(raw, "")
		if !errors.Is(err, errs.ErrInvalidConfig) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), ":pw@") {
			t.Errorf("Resolve(%q): %v, want invalid_config saying %q", raw, err, want)
		}
	}
}

func TestRedactNeverReturnsThePassword(t *testing.T) {
	cases := append([]string{
		"postgres://app:" + secret + "@host/db",
		"postgres://app@host/db?password=" + secret,
		"postgres://app@host/db?sslpassword=" + secret + "&sslmode=require",
		"postgres://app@host/db?pass%77ord=" + secret,
		"postgres://app@host/db?password=" + secret + "%zz",
		"mysql://u:123?" + secret + "@host/db", // '?' in the password
		"mysql://u:123#" + secret + "@host/db", // '#' in the password
	}, badURLs...)
	for _, raw := range cases {
		if got := Redact(raw); strings.Contains(got, secret) {
			t.Errorf("Redact(%q) = %q: shows the password", raw, got)
		}
	}
	if got := Redact("postgres://app:pw@host:5432/db?sslmode=disable"); got != "postgres://app:xxxxx@host:5432/db?sslmode=disable" {
		t.Errorf("Redact of a good URL = %q", got)
	}
}

func TestResolveErrorHidesPassword(t *testing.T) {
	for _, raw := range badURLs {
		_, err := Resolve(raw, "")
		if err == nil {
			// some parse; the store's own open must then not leak it (open_test)
			continue
		}
		if !errors.Is(err, errs.ErrInvalidConfig) {
			t.Errorf("Resolve(%q): %v, want invalid_config", raw, err)
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(string(errs.Encode(err)), secret) {
			t.Errorf("Resolve(%q) error shows the password: %v", raw, err)
		}
	}
	// the MySQL path used to wrap the *url.Error, which quotes the raw URL
	if _, err := Resolve(badURLs[0], ""); err == nil || !strings.Contains(err.Error(), "root:xxxxx@") {
		t.Errorf("Resolve of a bad mysql URL: %v, want an error showing the redacted URL", err)
	}
	if _, err := Resolve(badURLs[4], ""); err == nil {
		t.Errorf("Resolve of an unparseable postgres URL succeeded")
	}
}

// FuzzResolve: neither Resolve nor Redact panics, and the password of a
// user:password@ URL never shows in Redact or in a Resolve error.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"mysql://", "postgres://", "mariadb://", "postgresql://", "sqlite:", "mysql:", ""} {
		f.Add(s, "root", secret, "127.0.0.1:3306/db?parseTime=true")
	}
	f.Add("mysql://", "root", "p/w@x", "host:bad/db")
	f.Add("postgres://", "a:b", "p?w#x", "[::1]:5432/db?password=x")
	f.Add("mysql://", "u", "123?abcdef", "h/db")
	f.Fuzz(func(t *testing.T, scheme, user, pw, rest string) {
		raw := scheme + user + ":" + pw + "@" + rest
		red := Redact(raw)
		_, err := Resolve(raw, "")
		Redact(scheme + user + rest) // must not panic either
		if len(pw) < 6 || strings.Contains(scheme+user+rest, pw) || strings.Contains(mask+"%", pw) {
			return // too short or not only in the password to tell
		}
		if strings.Contains(red, pw) {
			t.Errorf("Redact(%q) = %q shows the password", raw, red)
		}
		if err == nil {
			return
		}
		// the redacted URL, checked above, is quoted in the message as
		// Resolve sees it (trimmed): a password like `00000"` is the end
		// of such a quote, not a leak
		msg := err.Error()
		for _, r := range []string{red, strings.TrimSpace(red)} {
			msg = strings.ReplaceAll(msg, strconv.Quote(r), "")
		}
		if strings.Contains(msg, pw) && !strings.Contains(notAURL("").Error(), pw) {
			t.Errorf("Resolve(%q) error %q shows the password", raw, err)
		}
	})
}

// The DSN of a MariaDB/MySQL URL always has multi-statement queries off:
// whatever connects with it (the store's application pool, and through
// SQLDB every package's own SQL) never runs stacked queries. The URL only
// decides whether the store may keep its separate batch pool.
func TestMySQLDSNNeverAllowsMultiStatements(t *testing.T) {
	for _, c := range []struct {
		query string
		multi bool // Resolved.MultiStatements: the batch pool is allowed
	}{
		{"", true},
		{"?multiStatements=true", true},
		{"?multiStatements=false", false},
		{"?multiStatements=0", false},
		{"?multiStatements=False&parseTime=true", false},
		{"?multiStatements=true&multiStatements=false", false}, // any false wins
	} {
		raw := "mariadb://app:pw@db.example:3307/orders" + c.query
		r, err := Resolve(raw, "")
		if err != nil {
			t.Fatalf("Resolve(%q): %v", raw, err)
		}
		if r.MultiStatements != c.multi {
			t.Errorf("Resolve(%q).MultiStatements = %v, want %v", raw, r.MultiStatements, c.multi)
		}
		if n := strings.Count(r.DSN, "multiStatements="); n != 1 || !strings.Contains(r.DSN, "multiStatements=false") {
			t.Errorf("Resolve(%q).DSN = %q: want exactly one multiStatements=false", raw, r.DSN)
		}
		cfg, err := mysql.ParseDSN(r.DSN)
		if err != nil {
			t.Fatalf("ParseDSN(%q): %v", r.DSN, err)
		}
		if cfg.MultiStatements || cfg.Addr != "db.example:3307" || cfg.DBName != "orders" || cfg.User != "app" || cfg.Passwd != "pw" {
			t.Errorf("DSN of %q parses to multiStatements=%v addr=%q db=%q user=%q", raw, cfg.MultiStatements, cfg.Addr, cfg.DBName, cfg.User)
		}
	}
	if r, err := Resolve("mysql://root@127.0.0.1/db", ""); err != nil || r.DSN != "root@tcp(127.0.0.1:3306)/db?loc=UTC&multiStatements=false&parseTime=true&readTimeout=30s&timeout=5s&writeTimeout=30s" {
		t.Errorf("DSN of a plain URL: %q %v", r.DSN, err)
	}
	_, err := Resolve("mysql://root:"+secret+"@127.0.0.1/db?multiStatements=yes", "")
	if !errors.Is(err, errs.ErrInvalidConfig) || strings.Contains(err.Error(), secret) {
		t.Errorf("a multiStatements value that is no bool: %v, want invalid_config without the password", err)
	}
	if r, err := Resolve("postgres://app@host/db?multiStatements=true", ""); err != nil || r.MultiStatements {
		t.Errorf("postgres: MultiStatements=%v %v", r.MultiStatements, err)
	}
}
