package store

// MaxConnsEnv names the process environment variable that caps every
// PostgreSQL connection pool the process opens (the store's application
// pool, the schedule store's) when the caller sets no cap of its own, for a
// server whose max_connections must be shared by many processes (its
// default is 100). Reserved connections (shard lockers, LISTEN) come on top.
// scripts/test sets it so that every test process, and every process a test
// starts, stays inside one connection budget.
const MaxConnsEnv = "DB_MAX_CONNS"

// DefaultMaxConns is the application pool cap without DB_MAX_CONNS
// (internal/config reads it: config.MaxConns).
const DefaultMaxConns = 20
