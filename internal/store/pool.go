package store

import (
	"os"
	"strconv"

	"github.com/voltro/voltro/internal/errs"
)

// MaxConnsEnv names the process environment variable that caps every
// PostgreSQL connection pool the process opens (the store's application
// pool, the schedule store's) when the caller sets no cap of its own, for a
// server whose max_connections must be shared by many processes (its
// default is 100). Reserved connections (shard lockers, LISTEN) come on top.
// scripts/test sets it so that every test process, and every process a test
// starts, stays inside one connection budget.
const MaxConnsEnv = "DB_MAX_CONNS"

// DefaultMaxConns is the application pool cap without DB_MAX_CONNS.
const DefaultMaxConns = 20

// PoolCap is the pool cap from DB_MAX_CONNS, or def when it is not set.
func PoolCap(def int) (int, error) {
	v := os.Getenv(MaxConnsEnv)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, errs.New(errs.CodeInvalidConfig, "%s=%q: want a whole number of connections, 1 or more", MaxConnsEnv, v)
	}
	return n, nil
}
