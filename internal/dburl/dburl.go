// Package dburl resolves a connection URL (or DB_DIALECT) to a dialect and the
// driver-specific connection string.
package dburl

import (
	"fmt"
	"net/url"
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
}

// Resolve parses raw. dialect, when not empty (DB_DIALECT), overrides what the
// scheme says, e.g. DB_DIALECT=mariadb with a mysql:// URL.
func Resolve(raw, dialect string) (Resolved, error) {
	raw = strings.TrimSpace(raw)
	r := Resolved{URL: raw}
	switch {
	case raw == "" || raw == "memory:" || raw == "memory://" || raw == "memory":
		r.Dialect = store.Memory
	case strings.HasPrefix(raw, "postgres://") || strings.HasPrefix(raw, "postgresql://"):
		r.Dialect = store.Postgres
	case strings.HasPrefix(raw, "mariadb://"):
		r.Dialect = store.MariaDB
	case strings.HasPrefix(raw, "mysql://"):
		r.Dialect = store.MySQL
	case strings.HasPrefix(raw, "sqlite:") || strings.HasSuffix(raw, ".db") || strings.HasSuffix(raw, ".sqlite") || strings.HasSuffix(raw, ".sqlite3"):
		r.Dialect = store.SQLite
	default:
		return r, errs.New(errs.CodeInvalidConfig, "DB_URL %q: unknown scheme (use postgres://, mariadb://, mysql://, sqlite:<path> or a .db path, memory:)", redact(raw))
	}
	if dialect != "" {
		d := store.Dialect(strings.ToLower(strings.TrimSpace(dialect)))
		switch d {
		case store.Postgres, store.MariaDB, store.MySQL, store.SQLite, store.Memory:
		case "postgresql":
			d = store.Postgres
		default:
			return r, errs.New(errs.CodeInvalidConfig, "DB_DIALECT %q is not one of postgres, mariadb, mysql, sqlite, memory", dialect)
		}
		compatible := d == r.Dialect || (d == store.MariaDB && r.Dialect == store.MySQL) || (d == store.MySQL && r.Dialect == store.MariaDB)
		if !compatible && !(r.Dialect == store.Memory && raw == "") {
			return r, errs.New(errs.CodeInvalidConfig, "DB_DIALECT=%s does not match DB_URL scheme (%s)", d, r.Dialect)
		}
		r.Dialect = d
	}
	var err error
	switch r.Dialect {
	case store.Postgres:
		r.DSN = raw
		if u, perr := url.Parse(raw); perr == nil {
			r.Database = strings.TrimPrefix(u.Path, "/")
		}
	case store.MariaDB, store.MySQL:
		r.DSN, r.Database, err = mysqlDSN(raw)
	case store.SQLite:
		p := strings.TrimPrefix(raw, "sqlite://")
		p = strings.TrimPrefix(p, "sqlite:")
		if i := strings.IndexByte(p, '?'); i >= 0 {
			p = p[:i]
		}
		if p == "" {
			return r, errs.New(errs.CodeInvalidConfig, "DB_URL %q names no SQLite file", raw)
		}
		r.DSN, r.Database = p, p
	}
	return r, err
}

// mysqlDSN turns mysql://user:pass@host:port/db?k=v into go-sql-driver form.
func mysqlDSN(raw string) (dsn, db string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", errs.Wrap(errs.CodeInvalidConfig, err, "DB_URL is not a valid URL")
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
	for k, v := range map[string]string{"parseTime": "true", "loc": "UTC", "timeout": "5s", "readTimeout": "30s", "writeTimeout": "30s", "multiStatements": "true"} {
		if q.Get(k) == "" {
			q.Set(k, v)
		}
	}
	proto := "tcp(" + host + ")"
	if s := q.Get("socket"); s != "" {
		proto = "unix(" + s + ")"
		q.Del("socket")
	}
	return fmt.Sprintf("%s%s/%s?%s", auth, proto, db, q.Encode()), db, nil
}

// redact hides a password in a URL for messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// Redact hides the password of a URL for logs.
func Redact(raw string) string { return redact(raw) }
