package workflow

// Who hosts a workflow. A run of a name no live runner hosts waits for
// ever (a typo at a start, a workflow a deploy removed): a start refuses
// it unless forced, and a cancel finishes it at once instead of queueing a
// message nobody would read. The hosts' rows also carry the input schema
// of typed workflows (schema.go), against which a start by name checks
// its input.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/registry"
	"github.com/voltro/voltro/internal/store"
)

// Hosting is who hosts one workflow, by the runners table.
type Hosting struct {
	// Judged is false where the store has no table of live runners to ask
	// (single-process runner storage): then nothing is refused.
	Judged bool
	// Hosts are the live runners hosting the workflow asked about.
	Hosts []string
	// Hosted are the names of every workflow some live runner hosts.
	Hosted []string
	// Inputs are the input schemas (InputSchema) the Hosts publish, one
	// per distinct schema; empty where none does (an older runner, an
	// input type that accepts anything).
	Inputs []PublishedSchema
}

// PublishedSchema is an input schema and the runner that published it.
type PublishedSchema struct {
	Runner string
	Schema json.RawMessage
}

// Hosting reports which live runners (healthy, heartbeat younger than
// three heartbeats, by the database clock) host workflow name.
func (w *Engine) Hosting(ctx context.Context, name string) (Hosting, error) {
	if !w.e.Config().Clustered() {
		return Hosting{}, nil
	}
	runners, err := w.e.Store().ListRunners(ctx)
	if err != nil {
		return Hosting{}, fmt.Errorf("reading the runners table: %w", err)
	}
	hosted := store.HostedTypes(runners, 3*w.e.Config().Heartbeat)
	for _, t := range w.e.Deliverer().Types() { // this process, if it runs workflows
		if len(hosted[t]) == 0 {
			hosted[t] = []string{w.e.Address()}
		}
	}
	h := Hosting{Judged: true, Hosts: hosted[EntityPrefix+name], Hosted: []string{}}
	for _, t := range slices.Sorted(maps.Keys(hosted)) {
		if n, ok := strings.CutPrefix(t, EntityPrefix); ok {
			h.Hosted = append(h.Hosted, n)
		}
	}
	add := func(runner string, schema json.RawMessage) {
		if schema != nil && !slices.ContainsFunc(h.Inputs, func(p PublishedSchema) bool { return bytes.Equal(p.Schema, schema) }) {
			h.Inputs = append(h.Inputs, PublishedSchema{Runner: runner, Schema: schema})
		}
	}
	for _, r := range runners {
		if slices.Contains(h.Hosts, r.Address) {
			add(r.Address, registry.ParseMeta(r.Meta).Inputs[EntityPrefix+name])
		}
	}
	w.mu.Lock()
	if d := w.defs[name]; d != nil && slices.Contains(h.Hosts, w.e.Address()) {
		add(w.e.Address(), d.schema)
	}
	w.mu.Unlock()
	return h, nil
}

// CheckInput refuses input that no input schema the hosts publish accepts
// (while a deploy changes the type, runners may disagree: input that fits
// any of them is let through). Without a published schema it accepts
// anything. The refusal names each mismatch: path, expected and got.
func (h Hosting) CheckInput(name string, input []byte) error {
	var first []string
	var from string
	for _, p := range h.Inputs {
		problems, err := CheckInput(p.Schema, input)
		if err != nil || len(problems) == 0 {
			return nil // an unreadable schema refuses nothing
		}
		if first == nil {
			first, from = problems, p.Runner
		}
	}
	if first == nil {
		return nil
	}
	return errs.New(errs.CodeInvalidArgument, "the input does not fit workflow %q (its input schema, as runner %s publishes it); the run would fail with \"cannot decode input\":\n  %s\npass --force (without voltro.RequireHost) to start it anyway",
		name, from, strings.Join(first, "\n  "))
}

// NotHostedError is the refusal of a start no live runner would run.
func NotHostedError(name string, h Hosting) error {
	known := "no live runner hosts any workflow"
	if len(h.Hosted) > 0 {
		known = "live runners host: " + strings.Join(h.Hosted, ", ")
	}
	return errs.New(errs.CodeUnregistered, "no live runner hosts workflow %q (%s); check the name, or pass --force (without voltro.RequireHost) to queue it for a deploy on its way", name, known)
}

// CancelOutcome says what a cancel did.
type CancelOutcome struct {
	// Requested: the cancel was queued for the runner that hosts the run.
	Requested bool
	// Finished: no live runner hosts the run's workflow, so the run was
	// marked cancelled here and DeadLettered of its pending messages were
	// dead-lettered, in one transaction.
	Finished     bool
	DeadLettered int
	// Status is the run's status when it was already finished (neither
	// of the above happened).
	Status store.ExecStatus
}

// CancelRun cancels run id. While a live runner hosts its workflow (or
// where that cannot be judged) the cancel is requested as Cancel does and
// the run stops at its next replay. When none does, nobody would read the
// request: the run is finished as cancelled at once and its pending
// messages dead-lettered (replayable), and its parent is woken and its
// children closed by their policy, as a runner would.
func (w *Engine) CancelRun(ctx context.Context, id string) (CancelOutcome, error) {
	defer w.clk.Hold()() // a virtual clock waits for the cancel's message
	x, err := w.ws.GetExecution(ctx, id)
	if err != nil {
		return CancelOutcome{}, err
	}
	if x.Status.Terminal() {
		return CancelOutcome{Status: x.Status}, nil
	}
	typ := EntityPrefix + x.Name
	h, err := w.Hosting(ctx, x.Name)
	if err != nil {
		return CancelOutcome{}, err
	}
	if h.Judged && len(h.Hosts) == 0 {
		return w.cancelUnhosted(ctx, w.e.Store(), x, typ)
	}
	ok, err := w.ws.RequestCancel(ctx, id, &store.Message{Shard: x.Shard, EntityType: typ, EntityID: x.ID, Tag: TagCancel, DedupeKey: "wf-cancel:" + x.ID})
	if err != nil {
		return CancelOutcome{}, err
	}
	w.e.WakeShard(x.Shard)
	if !ok { // finished meanwhile
		if x, err = w.ws.GetExecution(ctx, id); err != nil {
			return CancelOutcome{}, err
		}
		return CancelOutcome{Status: x.Status}, nil
	}
	return CancelOutcome{Requested: true}, nil
}

func (w *Engine) cancelUnhosted(ctx context.Context, bs store.Backlog, x store.Execution, typ string) (CancelOutcome, error) {
	why := fmt.Sprintf("workflow %s cancelled while no live runner hosted %s", x.ID, typ)
	reason := errs.Encode(errs.New(errs.CodeCancelled, "%s", why))
	done, n, err := bs.CancelExecution(ctx, store.ExecutionCancel{ID: x.ID, EntityType: typ, Error: reason, LastError: why, ReplyErr: reason})
	if err != nil {
		return CancelOutcome{}, err
	}
	if !done { // finished meanwhile
		if x, err = w.ws.GetExecution(ctx, x.ID); err != nil {
			return CancelOutcome{}, err
		}
		return CancelOutcome{Status: x.Status}, nil
	}
	w.log.Info("workflow cancelled without a runner", "execution", x.ID, "workflow", x.Name, "dead_lettered", n)
	w.introEvent(x.ID, string(store.ExecCancelled), why)
	w.introRun(x, store.ExecCancelled, why)
	w.closeChildren(ctx, x)
	w.notifyParent(ctx, x)
	return CancelOutcome{Finished: true, DeadLettered: n}, nil
}
