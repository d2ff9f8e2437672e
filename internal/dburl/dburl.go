package dburl

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// Resolved is a parsed connection URL.
type Resolved struct {
	Dialect store.Dialect
	URL     string // as given
	// DSN is what the Go driver takes: a pgx URL for postgres, a
	// go-sql-driver DSN for mariadb/mysql, a file path for sqlite, "" for memory.
	DSN string
	// Database is the database name (or the file path for sqlite).
	Database string
	// MultiStatements is, for mariadb/mysql, whether the store may open a
	// small pool of its own with multi-statement queries on, for its
	// fixed-text batched writes: true unless the URL sets
	// multiStatements=false. DSN itself always says multiStatements=false,
	// whatever the URL asks for, so that a connection opened with it (the
	// store's application pool, handed out to other packages and used with
	// their SQL; the schedule store's; the change feed's) never runs stacked
	// queries, and an injection into one statement cannot append another.
	MultiStatements bool
}

// Resolve parses raw. dialect, when not empty (DB_DIALECT), overrides what the
// scheme says, e.g. DB_DIALECT=mariadb with a mysql:// URL.
func Resolve(raw, dialect string) (Resolved, error) {
	raw = strings.TrimSpace(raw)
	r := Resolved{URL: raw}
	var err error
	if r.Dialect, err = schemeDialect(raw); err != nil {
		return r, err
	}
	if dialect != "" {
		d, derr := overrideDialect(r.Dialect, raw, dialect)
		if derr != nil {
			return r, derr
		}
		r.Dialect = d
	}
	err = r.connect(raw)
	return r, err
}

// schemeDialect is the dialect raw's scheme (or file suffix) names.
func schemeDialect(raw string) (store.Dialect, error) {
	switch {
	case raw == "" || raw == "memory:" || raw == "memory://" || raw == "memory":
		return store.Memory, nil
	case strings.HasPrefix(raw, "postgres://") || strings.HasPrefix(raw, "postgresql://"):
		return store.Postgres, nil
	case strings.HasPrefix(raw, "mariadb://"):
		return store.MariaDB, nil
	case strings.HasPrefix(raw, "mysql://"):
		return store.MySQL, nil
	case strings.HasPrefix(raw, "sqlite:") || strings.HasSuffix(raw, ".db") || strings.HasSuffix(raw, ".sqlite") || strings.HasSuffix(raw, ".sqlite3"):
		return store.SQLite, nil
	case hasScheme(raw, "sqlserver", "mssql"):
		return "", errs.New(errs.CodeInvalidConfig, "DB_URL %q: SQL Server is not supported: voltro runs on PostgreSQL, MariaDB/MySQL and SQLite (see docs/configuration.md#databases)", redact(raw))
	case hasScheme(raw, "libsql", "turso"):
		return "", errs.New(errs.CodeInvalidConfig, "DB_URL %q: remote Turso/libSQL is not supported: use a local SQLite file (sqlite:<path>) for one process, PostgreSQL or MariaDB/MySQL for a cluster (see docs/configuration.md#databases)", redact(raw))
	default:
		return "", errs.New(errs.CodeInvalidConfig, "DB_URL %q: unknown scheme (use postgres://, mariadb://, mysql://, sqlite:<path> or a .db path, memory:)", redact(raw))
	}
}

// hasScheme reports whether raw starts with one of schemes and "://" (or
// ":"), in any case.
func hasScheme(raw string, schemes ...string) bool {
	l := strings.ToLower(raw)
	for _, sc := range schemes {
		if strings.HasPrefix(l, sc+"://") || strings.HasPrefix(l, sc+":") {
			return true
		}
	}
	return false
}

// overrideDialect checks DB_DIALECT against the scheme's dialect and returns
// the one to use.
func overrideDialect(scheme store.Dialect, raw, dialect string) (store.Dialect, error) {
	d := store.Dialect(strings.ToLower(strings.TrimSpace(dialect)))
	switch d {
	case store.Postgres, store.MariaDB, store.MySQL, store.SQLite, store.Memory:
	case "postgresql":
		d = store.Postgres
	default:
		return "", errs.New(errs.CodeInvalidConfig, "DB_DIALECT %q is not one of postgres, mariadb, mysql, sqlite, memory", dialect)
	}
	compatible := d == scheme || (d == store.MariaDB && scheme == store.MySQL) || (d == store.MySQL && scheme == store.MariaDB)
	if !compatible && !(scheme == store.Memory && raw == "") {
		return "", errs.New(errs.CodeInvalidConfig, "DB_DIALECT=%s does not match DB_URL scheme (%s)", d, scheme)
	}
	return d, nil
}

// connect fills in the driver's DSN and the database name for r's dialect.
func (r *Resolved) connect(raw string) error {
	var err error
	switch r.Dialect {
	case store.Postgres:
		u, perr := url.Parse(raw)
		if perr != nil {
			return notAURL(raw)
		}
		r.DSN = raw
		r.Database = strings.TrimPrefix(u.Path, "/")
	case store.MariaDB, store.MySQL:
		r.DSN, r.Database, r.MultiStatements, err = mysqlDSN(raw)
	case store.SQLite:
		p := strings.TrimPrefix(raw, "sqlite://")
		p = strings.TrimPrefix(p, "sqlite:")
		if i := strings.IndexByte(p, '?'); i >= 0 {
			p = p[:i]
		}
		if p == "" {
			return errs.New(errs.CodeInvalidConfig, "DB_URL %q names no SQLite file", redact(raw))
		}
		r.DSN, r.Database = p, p
	}
	return err
}

// mysqlDSN turns mysql://user:pass@host:port/db?k=v into go-sql-driver form,
// with multi-statement queries off; multi reports whether the URL leaves the
// store's batch pool allowed (it does unless it says multiStatements=false).
func mysqlDSN(raw string) (dsn, db string, multi bool, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", false, notAURL(raw)
	}
	host := u.Host
	if host == "" {
		host = "127.0.0.1:3306"
	} else if u.Port() == "" {
		host += ":3306"
	}
	var auth string
	if u.User != nil {
		auth = u.User.Username()
		if p, ok := u.User.Password(); ok {
			auth += ":" + p
		}
		auth += "@"
	}
	db = strings.TrimPrefix(u.Path, "/")
	q := u.Query()
	multi = true
	for _, v := range q["multiStatements"] {
		on, perr := strconv.ParseBool(v)
		if perr != nil {
			// not quoting v: in a URL with a misplaced '@' it may hold part of the password
			return "", "", false, errs.New(errs.CodeInvalidConfig, "DB_URL %q: multiStatements must be true or false", redact(raw))
		}
		multi = multi && on // any false wins
	}
	q.Set("multiStatements", "false")
	for k, v := range map[string]string{"parseTime": "true", "loc": "UTC", "timeout": "5s", "readTimeout": "30s", "writeTimeout": "30s"} {
		if q.Get(k) == "" {
			q.Set(k, v)
		}
	}
	proto := "tcp(" + host + ")"
	if s := q.Get("socket"); s != "" {
		proto = "unix(" + s + ")"
		q.Del("socket")
	}
	return fmt.Sprintf("%s%s/%s?%s", auth, proto, db, q.Encode()), db, multi, nil
}

// notAURL is the error for a DB_URL that does not parse. It never wraps the
// *url.Error: that quotes the raw URL, and its reason ("invalid port
// \":secret\" after host") can quote part of the password too.
func notAURL(raw string) error {
	return errs.New(errs.CodeInvalidConfig, "DB_URL %q is not a valid URL (percent-encode special characters such as @ : / ? # %% in the user name and password)", redact(raw))
}

// mask replaces a password in messages.
const mask = "xxxxx"

// passwordParam matches a password query parameter and its value.
// keywordPassword finds the password of a keyword/value connection string
// (libpq's host=… password=…), quoted or not.
var keywordPassword = regexp.MustCompile(`(?i)((?:^|\s)(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'?|\S*)`)

var passwordParam = regexp.MustCompile(`(?i)((?:^|[?&;\s])(?:(?:ssl)?password|authtoken)=)[^&;\s]*`)

// redact hides the password of a URL for messages: the userinfo password and
// password/sslpassword query values. A URL that does not parse has no certain
// boundaries, so redact hides all of its authority but the user name and
// what follows the last '@', and over-masks rather than leak; so does an
// opaque URL with an '@' (mysql:user:pw@host).
func redact(raw string) string {
	if !strings.Contains(raw, "://") && keywordPassword.MatchString(raw) {
		// a libpq keyword DSN ("host=db password=…"): not a URL at all
		return keywordPassword.ReplaceAllString(raw, "${1}"+mask)
	}
	u, err := url.Parse(raw)
	if err == nil && u.Opaque != "" && !strings.Contains(raw, "@") {
		return passwordParam.ReplaceAllString(raw, "${1}"+mask) // sqlite:file?…
	}
	// "mysql://u:123?pw@host" parses, with no password and "pw@host" as its
	// query: an '@' outside the userinfo is likely a password's, so mask.
	// The same when the userinfo took one '@' and another follows it
	// ("//@:000?00@0": user "", then "00@0" as the query).
	taken := 0
	if err == nil && u.User != nil {
		taken = 1
	}
	misplacedAt := err == nil && strings.Count(raw, "@") > taken
	if err == nil && u.Opaque == "" && !misplacedAt {
		if u.User != nil {
			if _, ok := u.User.Password(); ok {
				u.User = url.UserPassword(u.User.Username(), mask)
			}
		}
		if u.RawQuery != "" {
			q := u.Query()
			hit := false
			for k := range q {
				if lk := strings.ToLower(k); lk == "password" || lk == "sslpassword" || lk == "authtoken" {
					q[k] = []string{mask}
					hit = true
				}
			}
			if hit {
				u.RawQuery = q.Encode()
			}
			// and the pairs Query skipped for a bad escape
			u.RawQuery = passwordParam.ReplaceAllString(u.RawQuery, "${1}"+mask)
		}
		return u.String()
	}
	scheme, rest := "", raw
	if i := strings.Index(raw, "://"); i >= 0 {
		scheme, rest = raw[:i+3], raw[i+3:]
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return scheme + mask
	}
	user, tail := rest[:at], rest[at+1:]
	if i := strings.IndexAny(user, ":/?#"); i >= 0 {
		user = user[:i]
	}
	return scheme + user + ":" + mask + "@" + passwordParam.ReplaceAllString(tail, "${1}"+mask)
}

// Redact hides the password of a URL for logs and messages; it never returns
// a password, whether or not raw parses.
func Redact(raw string) string { return redact(raw) }
