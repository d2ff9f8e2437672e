package voltro

// Two live instances given one replica id (POD_NAME) look healthy each on
// its own, while on MariaDB their binlog readers derive one server_id and
// the server keeps dropping one stream for the other (error 4052), and
// their CDC offsets and schedule runs mix. Every heartbeat a clustered
// instance looks for another live runner row with its replica id, says so
// in its log when that changes, and shows it in inspect
// (extra.sameReplicaIdRunners, read by `voltro cluster status`).

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/voltro/voltro/internal/service"
)

type replicaWatch struct {
	mu     sync.Mutex
	others []string // runner addresses of other live instances with this replica id
}

// watchReplicaID installs the watch: started with the app, stopped at Close.
func (a *App) watchReplicaID() {
	cfg := a.e.Config()
	if !cfg.Clustered() {
		return // no runner rows to compare
	}
	w := &replicaWatch{}
	a.replicas = w // inspect reports it (facts.go)
	loop := service.NewLoop(func(ctx context.Context) { a.runReplicaWatch(ctx, w) })
	a.hooks = append(a.hooks, loop.Start)
	a.closes = append(a.closes, func(context.Context) error { loop.Stop(); return nil })
}

// text is the other instances' runner addresses, comma-separated.
func (w *replicaWatch) text() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.others, ",")
}

func (a *App) runReplicaWatch(ctx context.Context, w *replicaWatch) {
	every := max(a.e.Config().Heartbeat, time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		a.checkReplicaID(ctx, w)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// checkReplicaID reads the runner rows once; a row counts as live while its
// heartbeat is younger than three heartbeats (the status' staleness rule).
func (a *App) checkReplicaID(ctx context.Context, w *replicaWatch) {
	rows, err := a.e.Store().ListRunners(ctx)
	if err != nil {
		return // the runner's own loop reports an unreadable store
	}
	cfg, self := a.e.Config(), a.e.Address()
	var others []string
	for _, r := range rows {
		if r.ReplicaID == cfg.ReplicaID && r.Address != self && r.HeartbeatAge < 3*cfg.Heartbeat {
			others = append(others, r.Address)
		}
	}
	slices.Sort(others)
	w.mu.Lock()
	before := w.others
	w.others = others
	w.mu.Unlock()
	switch {
	case len(others) > 0 && !slices.Equal(before, others):
		a.log.Error("another live instance uses this replica id: give every instance its own POD_NAME (on MariaDB their binlog readers derive one server_id and break each other's stream, error 4052)",
			"replicaId", cfg.ReplicaID, "runner", self, "sameReplicaIdRunners", strings.Join(others, ","))
	case len(others) == 0 && len(before) > 0:
		a.log.Info("no other live instance uses this replica id any more", "replicaId", cfg.ReplicaID)
	}
}
