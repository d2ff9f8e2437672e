package dashboard

// The JSON reads behind the Schedules, Messages and Logs panels.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/observe/cli"
	"github.com/voltro/voltro/internal/schedule"
	"github.com/voltro/voltro/internal/store"
)

// recentFirings is how many firings of each schedule the panel shows.
const recentFirings = 10

type scheduleView struct {
	schedule.ScheduleView
	Recent []store.ScheduleRun `json:"recent"`
	// Live are the firings running or queued now, on any replica.
	Live []store.ScheduleRun `json:"live"`
}

type schedulesView struct {
	Schedules []scheduleView `json:"schedules"`
	// Claims are each schedule's newest claim (which replica won the
	// latest tick).
	Claims []claimView `json:"claims"`
}

type claimView struct {
	Schedule  string    `json:"schedule"`
	ReplicaID string    `json:"replicaId"`
	ClaimedAt time.Time `json:"claimedAt"`
}

func (d *Dashboard) schedules(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ss := d.c.Store
	sums, err := ss.ScheduleSummaries(ctx)
	if err != nil {
		writeErr(w, err)
		return
	}
	now, err := d.c.Store.Now(ctx)
	if err != nil {
		writeErr(w, err)
		return
	}
	out := schedulesView{Schedules: []scheduleView{}, Claims: []claimView{}}
	// one read for every schedule's recent firings, not one per schedule
	latest, err := ss.LatestScheduleRuns(ctx, recentFirings)
	if err != nil {
		writeErr(w, err)
		return
	}
	for _, v := range schedule.Views(sums, now) {
		sv := scheduleView{ScheduleView: v, Recent: []store.ScheduleRun{}, Live: []store.ScheduleRun{}}
		for _, run := range latest[v.Name] {
			sv.Recent = append(sv.Recent, run)
			if run.Finished.IsZero() && run.Status != "" {
				sv.Live = append(sv.Live, run)
			}
		}
		out.Schedules = append(out.Schedules, sv)
	}
	o, err := ss.ScheduleOverview(ctx, now.Add(-3*d.c.Heartbeat))
	if err != nil {
		writeErr(w, err)
		return
	}
	if o != nil {
		for _, c := range o.Latest {
			out.Claims = append(out.Claims, claimView(c))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

type messagesView struct {
	Shards []shardDrainView `json:"shards"`
	Types  []typeView       `json:"types"`
	Dead   int              `json:"dead"`
	// OldestUndeliveredSeconds: age of the oldest due, unprocessed message.
	OldestUndeliveredSeconds float64          `json:"oldestUndeliveredSeconds"`
	DeadLetters              []deadLetterView `json:"deadLetters"`
}

type shardDrainView struct {
	Shard                   string     `json:"shard"`
	Owner                   string     `json:"owner"`
	Pending                 int        `json:"pending"`
	Claimed                 int        `json:"claimed"`
	Dead                    int        `json:"dead"`
	OldestDeliverableSecond float64    `json:"oldestDeliverableSeconds"`
	Types                   []typeView `json:"types"`
}

type typeView struct {
	EntityType               string  `json:"entityType"`
	Pending                  int     `json:"pending"`
	OldestDeliverableSeconds float64 `json:"oldestDeliverableSeconds"`
}

type deadLetterView struct {
	ID         int64     `json:"id"`
	Shard      string    `json:"shard"`
	EntityType string    `json:"entityType"`
	EntityID   string    `json:"entityId"`
	Tag        string    `json:"tag,omitempty"`
	Attempts   int       `json:"attempts"`
	LastError  string    `json:"lastError,omitempty"`
	CreatedAt  time.Time `json:"createdAt"`
}

func typeViews(ts []store.TypeBacklog) []typeView {
	out := []typeView{}
	for _, t := range ts {
		out = append(out, typeView{EntityType: t.EntityType, Pending: t.Pending, OldestDeliverableSeconds: t.OldestDeliverable.Seconds()})
	}
	return out
}

// maxDeadLetters bounds the dead letters the panel lists.
const maxDeadLetters = 100

func (d *Dashboard) messages(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ds, err := d.c.Store.DrainStats(ctx)
	if err != nil {
		writeErr(w, err)
		return
	}
	out := messagesView{Shards: []shardDrainView{}, Types: typeViews(ds.Types), Dead: ds.Dead,
		OldestUndeliveredSeconds: ds.OldestUndelivered.Seconds(), DeadLetters: []deadLetterView{}}
	for _, s := range ds.Shards {
		out.Shards = append(out.Shards, shardDrainView{Shard: s.Shard, Owner: s.Owner, Pending: s.Pending, Claimed: s.Claimed,
			Dead: s.Dead, OldestDeliverableSecond: s.OldestDeliverable.Seconds(), Types: typeViews(s.Types)})
	}
	dead, err := d.c.Store.ListMessages(ctx, store.MessageFilter{State: store.StateDead, Limit: maxDeadLetters})
	if err != nil {
		writeErr(w, err)
		return
	}
	for _, m := range dead {
		out.DeadLetters = append(out.DeadLetters, deadLetterView{ID: m.ID, Shard: m.Shard, EntityType: m.EntityType,
			EntityID: m.EntityID, Tag: m.Tag, Attempts: m.Attempts, LastError: m.LastError, CreatedAt: m.CreatedAt})
	}
	writeJSON(w, http.StatusOK, out)
}

// logTail is how many merged records the Logs panel shows.
const logTail = 200

type logsView struct {
	Records []json.RawMessage `json:"records"`
	// Notes are what `voltro logs` said on stderr (instances not reached,
	// tokens withheld).
	Notes string `json:"notes"`
}

func (d *Dashboard) logs(w http.ResponseWriter, r *http.Request) {
	if d.c.Logs == nil {
		writeErr(w, errs.New(errs.CodeUnavailable, "this dashboard does not know where the instances' logs are"))
		return
	}
	o := *d.c.Logs
	o.Tail, o.Format, o.Colour, o.Boot = logTail, "json", false, true
	var out, notes bytes.Buffer
	if err := cli.Logs(r.Context(), o, &out, &notes); err != nil {
		writeErr(w, err)
		return
	}
	v := logsView{Records: []json.RawMessage{}, Notes: notes.String()}
	sc := bufio.NewScanner(io.LimitReader(&out, 64<<20))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		if line := bytes.TrimSpace(sc.Bytes()); json.Valid(line) {
			v.Records = append(v.Records, json.RawMessage(bytes.Clone(line)))
		}
	}
	writeJSON(w, http.StatusOK, v)
}
