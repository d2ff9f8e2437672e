// Prepared statement cache. Parsing dominates the cost of a small statement
// on SQLite, so hot statements are prepared once per pool and reused;
// database/sql re-prepares them per connection as needed and SQLite
// re-prepares them itself after a schema change.

package sqlite

import (
	"context"
	"database/sql"
)

type stmtKey struct {
	db    *sql.DB
	query string
}

// prep returns the cached prepared statement for query on db, preparing it
// on first use. A failed prepare (e.g. before Migrate) is not cached. Never
// call it while holding a transaction on the write connection: preparing
// needs that connection. Prepare first, then use tx.StmtContext.
func (s *Store) prep(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	k := stmtKey{db, query}
	s.mu.Lock()
	st := s.stmts[k]
	s.mu.Unlock()
	if st != nil {
		return st, nil
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev := s.stmts[k]; prev != nil {
		_ = st.Close()
		return prev, nil
	}
	s.stmts[k] = st
	return st, nil
}

// closeStmts closes every cached statement.
func (s *Store) closeStmts() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, st := range s.stmts {
		_ = st.Close()
		delete(s.stmts, k)
	}
}

// execW runs a write statement on the write connection.
func (s *Store) execW(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := s.prep(ctx, s.w, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// queryW runs a statement returning rows on the write connection.
func (s *Store) queryW(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := s.prep(ctx, s.w, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// queryR runs a statement returning rows on the read pool.
func (s *Store) queryR(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := s.prep(ctx, s.r, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// queryRowW runs a single-row statement on the write connection; a prepare
// error surfaces from Scan.
func (s *Store) queryRowW(ctx context.Context, query string, args ...any) rowScanner {
	st, err := s.prep(ctx, s.w, query)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(ctx, args...)
}

// queryRowR is queryRowW on the read pool.
func (s *Store) queryRowR(ctx context.Context, query string, args ...any) rowScanner {
	st, err := s.prep(ctx, s.r, query)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(ctx, args...)
}

type rowScanner interface{ Scan(...any) error }

// errRow is a row whose Scan reports a prepare error.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
