// Benchmark support (store/bench.go): the commit-rate probe and planner
// statistics. SQLite has one writer at a time: the probe's workers share
// the store's one write connection, as the store's own writes do. There is
// no server (no statement counters, no sibling databases beside the file).

package sqlite

import (
	"context"
	"time"

	"github.com/voltro/voltro/internal/store"
)

var (
	_ store.CommitProber    = (*Store)(nil)
	_ store.HistoryAnalyzer = (*Store)(nil)
)

func (s *Store) CommitRate(ctx context.Context, conns int, d time.Duration) (float64, error) {
	// The table comes from migration 0700; emptying it first also says,
	// on a database never migrated, what is missing.
	if _, err := s.w.ExecContext(ctx, `DELETE FROM `+store.BenchCommitTable); err != nil {
		return 0, s.wrap(err, store.BenchCommitMissing)
	}
	defer func() { _, _ = s.w.ExecContext(context.WithoutCancel(ctx), `DELETE FROM `+store.BenchCommitTable) }()
	rate, err := store.MeasureCommits(ctx, conns, d, func(context.Context) (func(context.Context, int) error, func(), error) {
		return func(ctx context.Context, i int) error {
			_, err := s.w.ExecContext(ctx, `INSERT INTO `+store.BenchCommitTable+` (v) VALUES (?)`, i)
			return err
		}, func() {}, nil
	})
	return rate, s.wrap(err, "commit rate")
}

func (s *Store) AnalyzeHistory(ctx context.Context) error {
	for _, t := range store.HistoryTables {
		if _, err := s.w.ExecContext(ctx, `ANALYZE "`+t+`"`); err != nil {
			return s.wrap(err, "analyze "+t)
		}
	}
	return nil
}
