// The one retry helper every write goes through. InnoDB reports a deadlock
// and Galera a certification conflict with 1213 (at the statement or at
// commit, even for autocommit upserts), and a lock wait that ran out with
// 1205; in both cases the unit of work is re-run from the start, a bounded
// number of times, after a jittered, growing pause.

package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

const (
	retryAttempts = 10
	retryBase     = 2 * time.Millisecond
	retryMax      = 200 * time.Millisecond
)

// retry runs fn until it succeeds, fails with an error that is not
// retryable, the attempts are used up or ctx ends. counter, when not nil,
// counts the re-runs.
func retry(ctx context.Context, counter *atomic.Int64, fn func() error) error {
	pause := retryBase
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || !retryable(err) || attempt >= retryAttempts {
			return err
		}
		if counter != nil {
			counter.Add(1)
		}
		// full jitter between pause/2 and pause*3/2
		d := pause/2 + rand.N(pause)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		pause = min(pause*2, retryMax)
	}
}

// retry is the store's helper: it counts re-runs in RetryCount.
func (s *Store) retry(ctx context.Context, fn func() error) error {
	return retry(ctx, &s.retries, fn)
}

// exec runs one autocommit statement on the pool under retry.
func (s *Store) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	var res sql.Result
	err := s.retry(ctx, func() error {
		var err error
		res, err = s.db.ExecContext(ctx, query, args...)
		return err
	})
	return res, err
}

// inTx runs fn in a transaction on the pool and commits, re-running the whole
// transaction on a retryable error. fn must not keep state across attempts
// other than what it returns through captured variables it resets itself.
func (s *Store) inTx(ctx context.Context, opts *sql.TxOptions, fn func(tx *sql.Tx) error) error {
	return s.retry(ctx, func() error {
		tx, err := s.db.BeginTx(ctx, opts)
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			_ = tx.Rollback()
			return err
		}
		return commit(ctx, tx)
	})
}

// commit commits tx, or gives up when ctx ends first. go-sql-driver/mysql
// watches the context during queries and execs but not during COMMIT, so a
// server that stops answering (a paused or partitioned node) would hold the
// caller until the connection dies, and shutdown with it. When ctx ends
// first the outcome is unknown, as after a connection lost mid-commit; the
// abandoned COMMIT ends with its connection.
func commit(ctx context.Context, tx *sql.Tx) error {
	if ctx.Done() == nil {
		return tx.Commit()
	}
	done := make(chan error, 1)
	go func() { done <- tx.Commit() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("commit: outcome unknown, the server did not answer before the context ended: %w", ctx.Err())
	}
}
