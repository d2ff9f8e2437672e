// What the store learns about the server at Open: flavor, version and
// whether it is a Galera node, which decide the SQL features it uses.

package mysql

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"

	gomysql "github.com/go-sql-driver/mysql"
)

type serverInfo struct {
	version      string // VERSION()
	mariadb      bool
	major, minor int
	galera       bool // @@wsrep_on = 1
	appliers     int  // @@wsrep_slave_threads on Galera, 0 elsewhere
	skipLocked   bool // FOR UPDATE SKIP LOCKED: MariaDB 10.6+, MySQL 8.0+
	returning    bool // INSERT … RETURNING: MariaDB 10.5+
}

// probe opens one connection with cfg and reads the server's identity.
func probe(ctx context.Context, cfg *gomysql.Config) (serverInfo, error) {
	db, err := openDB(cfg, 1)
	if err != nil {
		return serverInfo{}, err
	}
	defer db.Close()
	var info serverInfo
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&info.version); err != nil {
		return info, wrapErr("connect", err)
	}
	info.mariadb = strings.Contains(strings.ToLower(info.version), "mariadb")
	info.major, info.minor = parseVersion(info.version)
	if info.mariadb {
		info.skipLocked = info.major > 10 || (info.major == 10 && info.minor >= 6)
		info.returning = info.major > 10 || (info.major == 10 && info.minor >= 5)
	} else {
		info.skipLocked = info.major >= 8
	}
	if info.galera, err = wsrepOn(ctx, db); err != nil || !info.galera {
		return info, err
	}
	if err := db.QueryRowContext(ctx, "SELECT @@wsrep_slave_threads").Scan(&info.appliers); err != nil {
		return info, wrapErr("probe @@wsrep_slave_threads", err)
	}
	return info, nil
}

// wsrepOn reads @@wsrep_on; a server without the variable (MySQL) is not
// a Galera node.
func wsrepOn(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (bool, error) {
	var on sql.NullInt64
	err := q.QueryRowContext(ctx, "SELECT @@wsrep_on").Scan(&on)
	var me *gomysql.MySQLError
	if errors.As(err, &me) && me.Number == 1193 { // unknown system variable
		return false, nil
	}
	if err != nil {
		return false, wrapErr("probe @@wsrep_on", err)
	}
	return on.Valid && on.Int64 == 1, nil
}

// parseVersion reads "10.11.19-MariaDB-…" or "8.0.36" as (major, minor).
func parseVersion(v string) (int, int) {
	parts := strings.SplitN(v, ".", 3)
	num := func(i int) int {
		if i >= len(parts) {
			return 0
		}
		s := parts[i]
		end := 0
		for end < len(s) && s[end] >= '0' && s[end] <= '9' {
			end++
		}
		n, _ := strconv.Atoi(s[:end])
		return n
	}
	return num(0), num(1)
}
