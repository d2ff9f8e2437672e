// Small SQL helpers: lock names, dedupe key encoding, placeholder lists,
// JSON columns and nullable times.

package mysql

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
)

// sessionSQLMode keeps ON DUPLICATE KEY UPDATE assignments evaluated left to
// right (the lease upserts rely on it) even where a server enables MariaDB's
// SIMULTANEOUS_ASSIGNMENT mode. Set on the connections that run them.
const sessionSQLMode = "REPLACE(@@SESSION.sql_mode, 'SIMULTANEOUS_ASSIGNMENT', '')"

// maxLockName is GET_LOCK's limit on MariaDB and MySQL.
const maxLockName = 64

// lockName derives a server-wide GET_LOCK name from the namespace, the
// database (lock names are per server, not per database) and key. Names that
// would be longer than 64 characters are hashed.
func lockName(namespace, database, key string) string {
	full := namespace + "/" + database + "/" + key
	if len(full) <= maxLockName {
		return full
	}
	h := sha256.Sum256([]byte(full))
	prefix := namespace
	if len(prefix) > 16 {
		prefix = prefix[:16]
	}
	return prefix + "#" + hex.EncodeToString(h[:20])
}

// maxDedupeKey is the width of the dedupe_key column.
const maxDedupeKey = 191

const dedupeHashPrefix = "sha256:"

// encodeDedupe returns the unique column value and, when that is a hash, the
// original key. Keys that could be mistaken for a hash are hashed too, so two
// different keys never share a column value.
func encodeDedupe(key string) (col any, full any) {
	if key == "" {
		return nil, nil
	}
	if len(key) <= maxDedupeKey && !strings.HasPrefix(key, dedupeHashPrefix) {
		return []byte(key), nil
	}
	h := sha256.Sum256([]byte(key))
	return []byte(dedupeHashPrefix + hex.EncodeToString(h[:])), key
}

// placeholders returns "?, ?, …" with n marks.
func placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}

// anys turns a slice into query arguments.
func anys[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

func jsonStrings(xs []string) string {
	if xs == nil {
		xs = []string{}
	}
	b, _ := json.Marshal(xs)
	return string(b)
}

func parseStrings(s string) []string {
	var out []string
	if s == "" {
		return nil
	}
	_ = json.Unmarshal([]byte(s), &out)
	if len(out) == 0 {
		return nil
	}
	return out
}

func timeOf(t sql.NullTime) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time
}

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC()
}

func micros(d time.Duration) int64 { return d.Microseconds() }
