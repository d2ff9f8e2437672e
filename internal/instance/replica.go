package instance

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
)

type replicaWatch struct {
	mu     sync.Mutex
	others []string // runner addresses of other live instances with this replica id
}

// text is the other instances' runner addresses, comma-separated.
func (w *replicaWatch) text() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.others, ",")
}

// watchReplicaID checks every heartbeat until ctx ends (a part from Start
// to Stop, clustered only).
func (in *Instance) watchReplicaID(ctx context.Context) {
	every := max(in.Engine.Config().Heartbeat, time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		in.checkReplicaID(ctx, in.replicas)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// checkReplicaID reads the runner rows once; a row counts as live while its
// heartbeat is younger than three heartbeats (the status' staleness rule).
func (in *Instance) checkReplicaID(ctx context.Context, w *replicaWatch) {
	rows, err := in.Engine.Store().ListRunners(ctx)
	if err != nil {
		return // the runner's own loop reports an unreadable store
	}
	cfg, self := in.Engine.Config(), in.Engine.Address()
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
		in.Log.Error("another live instance uses this replica id: give every instance its own POD_NAME (on MariaDB their binlog readers derive one server_id and break each other's stream, error 4052)",
			"replicaId", cfg.ReplicaID, "runner", self, "sameReplicaIdRunners", strings.Join(others, ","))
	case len(others) == 0 && len(before) > 0:
		in.Log.Info("no other live instance uses this replica id any more", "replicaId", cfg.ReplicaID)
	}
}
