package store

// Backlogs nobody will drain. A message for an entity type that no live
// runner hosts waits for ever: it is a cluster condition (a typo at a start,
// a type a deploy removed), not a fault of any one instance. These are the
// operator's ways out: dead-letter the backlog (replayable with ReplayDead
// once a host exists), or finish a workflow run whose type nobody hosts.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/voltro/voltro/internal/errs"
)

// BacklogSelect picks the messages a backlog operation acts on: the
// undelivered messages of EntityType (and of EntityID, when set) that are
// not under a live claim. That is every pending message, due or not, and
// every claimed one whose claim is void (expired, or made at an epoch older
// than its shard's current one). A message under a live claim is being
// delivered by its shard's owner and is left to it.
type BacklogSelect struct {
	EntityType string
	EntityID   string // "" = every entity of the type
}

// ExecutionCancel finishes a run without a runner: its status becomes
// cancelled with Error (errs.Encode of the reason), and its entity's
// backlog is dead-lettered with LastError and a final reply carrying
// ReplyErr, in one transaction.
type ExecutionCancel struct {
	ID         string
	EntityType string // the run's entity type, "workflow/<name>"
	Error      []byte
	LastError  string
	ReplyErr   []byte
}

// Backlog is the group of the operator's ways out of a backlog nobody
// drains.
type Backlog interface {
	// DeadLetterBacklog moves the messages sel picks to dead with
	// lastError and stores for each a final reply carrying replyErr (a
	// reply already stored is kept), in one transaction. It returns how
	// many it moved; an empty EntityType is an invalid argument.
	DeadLetterBacklog(ctx context.Context, sel BacklogSelect, lastError string, replyErr []byte) (int, error)
	// CancelExecution marks run c.ID cancelled (not cancel-requested: done,
	// with FinishedAt now) and dead-letters the backlog of entity
	// (c.EntityType, c.ID) as DeadLetterBacklog does, in one transaction.
	// cancelled=false, and nothing written, when the run is already
	// terminal; errs.ErrNotFound for an unknown run.
	CancelExecution(ctx context.Context, c ExecutionCancel) (cancelled bool, dead int, err error)
}

// HostedTypes returns, for every entity type a live runner hosts, the
// addresses of those runners (sorted). Live = registered healthy with a
// heartbeat younger than stale, by the database clock (Runner.HeartbeatAge).
func HostedTypes(runners []Runner, stale time.Duration) map[string][]string {
	out := map[string][]string{}
	for _, r := range runners {
		if !r.Healthy || r.HeartbeatAge >= stale {
			continue
		}
		for _, t := range r.EntityTypes {
			out[t] = append(out[t], r.Address)
		}
	}
	for _, as := range out {
		slices.Sort(as)
	}
	return out
}

// DeadLetterUnhosted dead-letters the backlog sel picks (see
// Backlog.DeadLetterBacklog), why being the messages' last error and
// their replies' message. Unless force, it refuses (errs.CodeInvalidArgument)
// a type a live runner hosts (heartbeat younger than stale): that runner
// drains it. It is the one operation behind `voltro messages dead` and the
// dashboard's action of the same name.
func DeadLetterUnhosted(ctx context.Context, d Driver, sel BacklogSelect, stale time.Duration, force bool, why string) (int, error) {
	bs, ok := d.(Backlog)
	if !ok {
		return 0, errs.New(errs.CodeUnavailable, "the %s store cannot dead-letter a backlog", d.Dialect())
	}
	if !force {
		runners, err := d.ListRunners(ctx)
		if err != nil {
			return 0, fmt.Errorf("reading the runners table: %w", err)
		}
		if hosts := HostedTypes(runners, stale)[sel.EntityType]; len(hosts) > 0 {
			return 0, errs.New(errs.CodeInvalidArgument, "entity type %q is hosted by live runner(s) %s, which drain it; pass --force (on the dashboard: force) to dead-letter its pending messages anyway", sel.EntityType, strings.Join(hosts, ", "))
		}
	}
	return bs.DeadLetterBacklog(ctx, sel, why, errs.Encode(errs.New(errs.CodeDeadLettered, "%s", why)))
}
