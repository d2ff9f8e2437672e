package dashboard

// The admin actions, each the operation the CLI runs: cancel a run
// (`voltro workflows cancel`), signal it (`workflows signal`), replay a
// dead letter (`messages replay`), dead-letter a backlog (`messages dead`).
// Routes guard them with the admin token (admin).

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// maxActionBody bounds an action's JSON body.
const maxActionBody = 1 << 20

// body decodes the action's JSON body into v (an empty body leaves v).
func body(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxActionBody+1))
	if err != nil {
		return errs.Wrap(errs.CodeInvalidArgument, err, "reading the request body")
	}
	if len(b) > maxActionBody {
		return errs.New(errs.CodeInvalidArgument, "request body over %d bytes", maxActionBody)
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return errs.Wrap(errs.CodeInvalidArgument, err, "request body is not the JSON this action takes")
	}
	return nil
}

func (d *Dashboard) cancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if d.c.Workflows == nil {
		writeErr(w, errs.New(errs.CodeUnavailable, "this dashboard has no workflow engine to cancel through"))
		return
	}
	wf, err := d.c.Workflows(r.Context())
	if err != nil {
		writeErr(w, err)
		return
	}
	out, err := wf.CancelRun(r.Context(), id)
	if err != nil {
		writeErr(w, fmt.Errorf("cancelling run %s: %w", id, err))
		return
	}
	d.c.Logger.Info("dashboard: run cancelled", "execution", id, "requested", out.Requested, "finished", out.Finished, "remote", r.RemoteAddr)
	msg := fmt.Sprintf("%s is already %s; nothing to cancel", id, out.Status)
	switch {
	case out.Finished:
		msg = fmt.Sprintf("%s cancelled: no live runner hosts its workflow; %d pending message(s) dead-lettered", id, out.DeadLettered)
	case out.Requested:
		msg = fmt.Sprintf("cancel requested for %s; the runner hosting it stops it at its next replay", id)
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "requested": out.Requested, "finished": out.Finished, "message": msg})
}

func (d *Dashboard) signal(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var in struct {
		Name    string          `json:"name"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := body(r, &in); err != nil {
		writeErr(w, err)
		return
	}
	if in.Name == "" {
		writeErr(w, errs.New(errs.CodeInvalidArgument, "a signal needs a name"))
		return
	}
	if len(in.Payload) == 0 {
		in.Payload = json.RawMessage("null")
	}
	if d.c.Workflows == nil {
		writeErr(w, errs.New(errs.CodeUnavailable, "this dashboard has no workflow engine to signal through"))
		return
	}
	wf, err := d.c.Workflows(r.Context())
	if err != nil {
		writeErr(w, err)
		return
	}
	stored, err := wf.Signal(r.Context(), id, in.Name, in.Payload)
	if err != nil {
		writeErr(w, fmt.Errorf("signalling run %s: %w", id, err))
		return
	}
	d.c.Logger.Info("dashboard: run signalled", "execution", id, "signal", in.Name, "stored", stored, "remote", r.RemoteAddr)
	msg := fmt.Sprintf("signal %q delivered to %s", in.Name, id)
	if !stored {
		msg = fmt.Sprintf("signal %q was already delivered to %s; the first one counts", in.Name, id)
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "stored": stored, "message": msg})
}

func (d *Dashboard) replay(w http.ResponseWriter, r *http.Request) {
	raw := r.PathValue("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		writeErr(w, errs.New(errs.CodeInvalidArgument, "message id %q is not a number", raw))
		return
	}
	if err := d.c.Store.ReplayDead(r.Context(), id); err != nil {
		writeErr(w, fmt.Errorf("replaying message %d: %w", id, err))
		return
	}
	if m, err := d.c.Store.GetMessage(r.Context(), id); err == nil && d.c.Wake != nil {
		d.c.Wake(m.Shard)
	}
	d.c.Logger.Info("dashboard: dead letter replayed", "message", id, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "state": store.StatePending,
		"message": fmt.Sprintf("message %d is pending again; its shard owner will deliver it", id)})
}

func (d *Dashboard) deadBacklog(w http.ResponseWriter, r *http.Request) {
	var in struct {
		EntityType string `json:"entityType"`
		EntityID   string `json:"entityId"`
		Force      bool   `json:"force"`
	}
	if err := body(r, &in); err != nil {
		writeErr(w, err)
		return
	}
	if in.EntityType == "" {
		writeErr(w, errs.New(errs.CodeInvalidArgument, "dead-lettering a backlog needs its entityType"))
		return
	}
	why := "dead-lettered from the dashboard: backlog of " + in.EntityType
	n, err := store.DeadLetterUnhosted(r.Context(), d.c.Store, store.BacklogSelect{EntityType: in.EntityType, EntityID: in.EntityID}, 3*d.c.Heartbeat, in.Force, why)
	if err != nil {
		writeErr(w, err)
		return
	}
	d.c.Logger.Info("dashboard: backlog dead-lettered", "entityType", in.EntityType, "entityId", in.EntityID, "messages", n, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, map[string]any{"entityType": in.EntityType, "deadLettered": n,
		"message": fmt.Sprintf("%d pending message(s) of entity type %s dead-lettered; replay them one by one from the dead letters", n, in.EntityType)})
}
