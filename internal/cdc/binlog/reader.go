// The binlog reader of one replica: streams from its stored GTID position,
// hands each committed transaction's row changes over, and keeps the
// position in _voltro_cdc_offsets.

package binlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/voltro/voltro/internal/cdc/delta"
	"github.com/voltro/voltro/internal/store"
)

// healthyAfter is how long a stream must last before earlier failures
// count as over.
const healthyAfter = 5 * time.Second

// Reader tails the binary log for one replica.
type Reader struct {
	Host     string
	Port     uint16
	User     string
	Password string
	// Database limits the changes to one schema (the application's).
	Database  string
	ReplicaID string
	ServerID  uint32
	// Offsets keep the resume position (the store's, on the application
	// pool).
	Offsets store.BinlogOffsets
	Logger  *slog.Logger
	// OnTx receives the row changes of one committed transaction, in commit
	// order, on the reader's goroutine.
	OnTx func(ds []delta.Delta)
	// OnGap is called when changes may have been skipped (the stored
	// position was no longer on the server).
	OnGap func(reason string)
	// SaveEvery bounds how often the position is written while changes
	// flow; it is always written when the reader stops.
	SaveEvery time.Duration
	// Ephemeral readers (a CLI watch) start at the current position and
	// store nothing.
	Ephemeral bool

	trouble  atomic.Pointer[string] // why the stream keeps failing; nil while it flows
	failures int                    // consecutive broken streams (Run's goroutine)

	pos       map[uint32]mysql.MariadbGTID // domain -> last committed
	lastSave  time.Time
	dirty     bool
	streaming bool
}

// Position renders the last committed position as a GTID list.
func (r *Reader) Position() string {
	parts := make([]string, 0, len(r.pos))
	for _, d := range slices.Sorted(maps.Keys(r.pos)) {
		g := r.pos[d]
		parts = append(parts, g.String())
	}
	return strings.Join(parts, ",")
}

// Run streams until ctx ends. ready is closed once the first stream is
// requested, so changes committed afterwards will be delivered.
func (r *Reader) Run(ctx context.Context, ready chan<- struct{}) error {
	if r.SaveEvery <= 0 {
		r.SaveEvery = 200 * time.Millisecond
	}
	var (
		start string
		ok    bool
		err   error
	)
	if !r.Ephemeral {
		if start, ok, err = r.Offsets.LoadOffset(ctx, r.ReplicaID); err != nil {
			return err
		}
	}
	if ok {
		r.Logger.Info("binlog reader resumes from stored position", "gtid", start, "server_id", r.ServerID)
	} else {
		if start, err = r.current(ctx); err != nil {
			return err
		}
		r.Logger.Info("binlog reader starts at the current position (no stored offset)", "gtid", start, "server_id", r.ServerID)
		r.dirty = true // store it at once, so a crash before the first change does not skip ahead
	}
	readyOnce := func() {
		if ready != nil {
			close(ready)
			ready = nil
		}
	}
	defer r.finalSave(ctx)
	backoff := 100 * time.Millisecond
	for {
		err := r.stream(ctx, start, readyOnce)
		if ctx.Err() != nil {
			return nil
		}
		if isPurged(err) {
			cur, cerr := r.current(ctx)
			if cerr != nil {
				r.Logger.Warn("binlog reader: cannot read the current position", "err", cerr)
				cur = start
			}
			r.Logger.Error("binlog position no longer on the server (error 1236); resynchronising from the current position — changes in between are not replayed",
				"lost_from", start, "resume_at", cur, "err", err)
			start = cur
			r.setPosition(cur)
			r.dirty = true
			r.save(ctx, true)
			r.OnGap("binlog position was purged on the server")
			continue
		}
		if r.streaming {
			start = r.Position()
		}
		r.failures++
		if isSameServerID(err) {
			msg := fmt.Sprintf("another replica streams the binlog with server_id %d (error 4052): two instances share the replica id %s (POD_NAME), so the server keeps dropping one stream for the other; give every instance its own POD_NAME", r.ServerID, r.ReplicaID)
			r.trouble.Store(&msg)
			if r.failures%20 == 1 { // loud, but not once per reconnect
				r.Logger.Error("binlog stream refused: "+msg, "server_id", r.ServerID, "replicaId", r.ReplicaID, "failures", r.failures, "err", err)
			}
		} else {
			msg := fmt.Sprintf("binlog stream broke %d time(s) in a row; last: %v", r.failures, err)
			r.trouble.Store(&msg)
		}
		r.Logger.Warn("binlog stream broke; reconnecting from the last committed position", "gtid", start, "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 3*time.Second)
	}
}

func (r *Reader) stream(ctx context.Context, start string, ready func()) error {
	gset, err := mysql.ParseMariadbGTIDSet(start)
	if err != nil {
		return fmt.Errorf("stored binlog position %q: %w", start, err)
	}
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID:                r.ServerID,
		Flavor:                  mysql.MariaDBFlavor,
		Host:                    r.Host,
		Port:                    r.Port,
		User:                    r.User,
		Password:                r.Password,
		Charset:                 "utf8mb4",
		HeartbeatPeriod:         2 * time.Second,
		ReadTimeout:             10 * time.Second,
		DisableRetrySync:        true,
		TimestampStringLocation: time.UTC,
		Logger:                  slog.New(quiet{r.Logger.Handler()}),
	})
	defer syncer.Close()
	opened := time.Now()
	st, err := syncer.StartSyncGTID(gset)
	if err != nil {
		return fmt.Errorf("start binlog stream at %q: %w", start, err)
	}
	r.setPosition(start)
	r.streaming = true
	r.save(ctx, true)
	ready()

	var (
		pending    []delta.Delta
		gtid       mysql.MariadbGTID
		inTx       bool
		standalone bool
		otherRows  bool
	)
	commit := func() {
		if !inTx {
			return
		}
		if len(pending) > 0 {
			r.OnTx(pending)
			pending = nil
		}
		r.pos[gtid.DomainID] = gtid
		if otherRows || standalone {
			r.dirty = true
		}
		inTx, otherRows = false, false
		r.save(ctx, false)
	}
	for {
		ev, err := st.GetEvent(ctx)
		if err != nil {
			return err
		}
		if r.trouble.Load() != nil && time.Since(opened) > healthyAfter {
			// the stream flows again (a server that refuses a stream still
			// sends its first events, so only a stream that lasts counts)
			r.trouble.Store(nil)
			r.failures = 0
		}
		switch e := ev.Event.(type) {
		case *replication.MariadbGTIDEvent:
			gtid, inTx, standalone, pending, otherRows = e.GTID, true, e.IsStandalone(), nil, false
		case *replication.RowsEvent:
			if e.Table == nil {
				continue
			}
			table := string(e.Table.Table)
			if table != store.CDCOffsetsTable {
				otherRows = true
			}
			// voltro's _voltro_ bookkeeping tables are skipped, but for
			// the introspection tables people follow (store.BinlogFollows)
			if string(e.Table.Schema) != r.Database || !store.BinlogFollows(table) {
				continue
			}
			if len(e.Table.ColumnName) == 0 {
				r.Logger.Warn("binlog row event without column names (binlog_row_metadata is not FULL); skipped", "table", table)
				continue
			}
			pending = append(pending, deltas(e)...)
		case *replication.XIDEvent:
			commit()
		case *replication.QueryEvent:
			if q := string(e.Query); strings.EqualFold(q, "COMMIT") || standalone {
				commit()
			}
		}
	}
}

// Trouble says why the stream keeps failing, "" while it flows (or has
// not failed yet). Safe from any goroutine.
func (r *Reader) Trouble() string {
	if p := r.trouble.Load(); p != nil {
		return *p
	}
	return ""
}

// isSameServerID reports error 4052: the server dropped this stream because
// another replica connected with the same server_id.
func isSameServerID(err error) bool {
	var me *mysql.MyError
	if errors.As(err, &me) {
		return me.Code == 4052
	}
	return err != nil && strings.Contains(err.Error(), "4052")
}

func (r *Reader) setPosition(gtids string) {
	r.pos = map[uint32]mysql.MariadbGTID{}
	for _, part := range strings.Split(gtids, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if g, err := mysql.ParseMariadbGTID(part); err == nil {
			r.pos[g.DomainID] = *g
		}
	}
}

// current is the server's latest binlogged position.
func (r *Reader) current(ctx context.Context) (string, error) {
	pos, err := r.Offsets.ServerPosition(ctx)
	if err != nil {
		return "", fmt.Errorf("read current binlog position: %w", err)
	}
	return pos, nil
}

func (r *Reader) save(ctx context.Context, force bool) {
	if r.Ephemeral || !r.dirty || (!force && time.Since(r.lastSave) < r.SaveEvery) {
		return
	}
	if err := r.Offsets.SaveOffset(ctx, r.ReplicaID, r.ServerID, r.Position()); err != nil {
		if ctx.Err() == nil {
			r.Logger.Warn("binlog reader: saving the position failed; will retry", "err", err)
		}
		return
	}
	r.dirty, r.lastSave = false, time.Now()
}

func (r *Reader) finalSave(ctx context.Context) {
	if !r.streaming {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	r.save(sctx, true)
}

// isPurged reports a 1236 error: the requested position is not in the
// server's binary logs any more (or never was).
func isPurged(err error) bool {
	var me *mysql.MyError
	if errors.As(err, &me) {
		return me.Code == mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG
	}
	return err != nil && strings.Contains(err.Error(), "1236")
}

// quiet keeps go-mysql's own chatter (Info and below) out of the log.
type quiet struct{ slog.Handler }

func (q quiet) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && q.Handler.Enabled(ctx, l)
}

// Handle drops the error go-mysql logs when closing a stream whose server
// thread has already ended; it is not a problem.
func (q quiet) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "kill connection" {
		return nil
	}
	return q.Handler.Handle(ctx, r)
}

func (q quiet) WithAttrs(as []slog.Attr) slog.Handler { return quiet{q.Handler.WithAttrs(as)} }
func (q quiet) WithGroup(n string) slog.Handler       { return quiet{q.Handler.WithGroup(n)} }
