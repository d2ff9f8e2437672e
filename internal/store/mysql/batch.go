// One-round-trip transactions: "START TRANSACTION; …; COMMIT" sent as a single
// multi-statement query on one connection of the batch pool (the only
// connections with multi statements on), used where a write is hot
// (Complete). The server stops at the first failing statement, which may
// leave the transaction open (a 1205 rolls back only its statement), so any
// error is followed by a ROLLBACK on the same connection before it goes back
// to the pool.

package mysql

import (
	"context"
	"database/sql/driver"
	"fmt"

	gomysql "github.com/go-sql-driver/mysql"
)

// execBatch runs query (several statements, the first START TRANSACTION and
// the last COMMIT) on the batch pool, under retry, and returns the rows
// affected by each statement. query must be the store's own text (constants
// and placeholders), never anything from outside.
func (s *Store) execBatch(ctx context.Context, query string, args ...any) ([]int64, error) {
	named := make([]driver.NamedValue, len(args))
	for i, a := range args {
		v, err := driver.DefaultParameterConverter.ConvertValue(a)
		if err != nil {
			return nil, fmt.Errorf("batch argument %d: %w", i+1, err)
		}
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	var affected []int64
	err := s.retry(ctx, func() error {
		conn, err := s.batch.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		return conn.Raw(func(dc any) error {
			ex, ok := dc.(driver.ExecerContext)
			if !ok {
				return fmt.Errorf("driver connection %T cannot execute", dc)
			}
			res, err := ex.ExecContext(ctx, query, named)
			if err != nil {
				if _, rerr := ex.ExecContext(context.WithoutCancel(ctx), "ROLLBACK", nil); rerr != nil {
					return fmt.Errorf("%w (and rollback failed: %w)", err, driver.ErrBadConn)
				}
				return err
			}
			r, ok := res.(gomysql.Result)
			if !ok {
				return fmt.Errorf("driver result %T has no per-statement counts", res)
			}
			affected = r.AllRowsAffected()
			return nil
		})
	})
	return affected, err
}
