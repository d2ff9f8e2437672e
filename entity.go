package voltro

// Typed entities: a name and a handler of typed messages addressed by
// entity id. Messages and replies travel as JSON.

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/voltro/voltro/internal/engine"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// Entity is a registered entity type with message type M and reply type R.
type Entity[M, R any] struct {
	name    string
	handler func(ctx context.Context, id string, msg M) (R, error)
	opts    engine.EntityOptions
}

// EntityOption tunes an entity type (MaxAttempts, Backoff, ShardGroup).
type EntityOption func(*entityOptions)

// entityOptions is what the entity options set.
type entityOptions struct{ engine.EntityOptions }

// MaxAttempts sets how many deliveries a failing message gets before it is
// dead-lettered (default 5).
func MaxAttempts(n int) EntityOption { return func(o *entityOptions) { o.MaxAttempts = n } }

// Backoff sets the delay before retry n (n >= 1).
func Backoff(f func(attempt int) time.Duration) EntityOption {
	return func(o *entityOptions) { o.Backoff = f }
}

// ShardGroup places the type in a shard group (VOLTRO_SHARD_GROUPS).
func ShardGroup(g string) EntityOption { return func(o *entityOptions) { o.Group = g } }

// NewEntity declares an entity type. The handler runs on the runner that
// owns the entity's shard, one message at a time per entity id, in order.
// Return Permanent(err) for an error retrying cannot fix; other errors and
// panics are retried with backoff and then dead-lettered.
func NewEntity[M, R any](name string, handler func(ctx context.Context, id string, msg M) (R, error), opts ...EntityOption) *Entity[M, R] {
	var o entityOptions
	for _, f := range opts {
		f(&o)
	}
	return &Entity[M, R]{name: name, handler: handler, opts: o.EntityOptions}
}

// Name is the entity type name.
func (e *Entity[M, R]) Name() string { return e.name }

func (e *Entity[M, R]) register(a *App) error {
	return a.e.Register(e.name, func(ctx context.Context, m store.Message) ([]byte, error) {
		var msg M
		if err := json.Unmarshal(m.Payload, &msg); err != nil {
			return nil, errs.Wrap(errs.CodeDecode, err, "entity "+e.name+": cannot decode message payload")
		}
		r, err := e.handler(withMessage(ctx, m), m.EntityID, msg)
		if err != nil {
			return nil, err
		}
		return json.Marshal(r)
	}, e.opts)
}

// SendOption tunes one send (DedupeKey, Delay, DeliverAt, Tag, Headers).
type SendOption func(*sendOptions)

// sendOptions is the message the send options set fields of.
type sendOptions struct{ engine.Message }

// DedupeKey makes the send idempotent: a repeat with the same key stores
// nothing new and returns the first send's reply.
func DedupeKey(k string) SendOption { return func(m *sendOptions) { m.DedupeKey = k } }

// Delay defers delivery, judged by the database clock.
func Delay(d time.Duration) SendOption { return func(m *sendOptions) { m.Delay = d } }

// DeliverAt defers delivery until t.
func DeliverAt(t time.Time) SendOption { return func(m *sendOptions) { m.DeliverAt = t } }

// Tag labels the message (shown in listings).
func Tag(t string) SendOption { return func(m *sendOptions) { m.Tag = t } }

// Headers attach string headers (trace context travels here).
func Headers(h map[string]string) SendOption { return func(m *sendOptions) { m.Headers = h } }

func (e *Entity[M, R]) message(id string, msg M, opts []SendOption) (engine.Message, error) {
	payload, err := json.Marshal(msg)
	if err != nil {
		return engine.Message{}, errs.Wrap(errs.CodeInvalidArgument, err, "entity "+e.name+": cannot encode message")
	}
	m := sendOptions{engine.Message{EntityType: e.name, EntityID: id, Payload: payload, Group: e.opts.Group}}
	for _, f := range opts {
		f(&m)
	}
	return m.Message, nil
}

// Sender is what sends entity messages that need no reply (Entity.Send,
// Entity.SendTx): an *App, or a *Client, so a web tier that hosts nothing
// can send a message too, also in its own transaction. Request and
// Volatile wait for the owner's reply, which only an App receives.
type Sender interface {
	sender() *engine.Engine
}

var (
	_ Sender = (*App)(nil)
	_ Sender = (*Client)(nil)
)

func (a *App) sender() *engine.Engine { return a.e }

// Send persists the message and returns; the owner delivers it. a is the
// App, or a Client (the entity type need not be registered where it is
// sent).
func (e *Entity[M, R]) Send(ctx context.Context, a Sender, id string, msg M, opts ...SendOption) error {
	m, err := e.message(id, msg, opts)
	if err != nil {
		return err
	}
	_, err = a.sender().Send(ctx, m)
	return err
}

// SendTx persists the message in the caller's transaction tx, opened on
// the database of a, the App or a Client (see Workflow.StartTx): the
// message exists if and only if tx commits, and its owner delivers it as
// soon as tx commits.
func (e *Entity[M, R]) SendTx(ctx context.Context, a Sender, tx *sql.Tx, id string, msg M, opts ...SendOption) error {
	m, err := e.message(id, msg, opts)
	if err != nil {
		return err
	}
	_, err = a.sender().SendTx(ctx, tx, m)
	return err
}

// Request persists the message and waits for its reply (bounded by ctx).
func (e *Entity[M, R]) Request(ctx context.Context, a *App, id string, msg M, opts ...SendOption) (R, error) {
	var zero R
	m, err := e.message(id, msg, opts)
	if err != nil {
		return zero, err
	}
	rep, err := a.e.Request(ctx, m)
	if err != nil {
		return zero, err
	}
	return decodeReply[R](e.name, rep.Payload, rep.Error)
}

// Volatile delivers the message without persisting it, through the owner's
// mailbox, and waits for the reply. Nothing is retried or recorded.
func (e *Entity[M, R]) Volatile(ctx context.Context, a *App, id string, msg M) (R, error) {
	var zero R
	m, err := e.message(id, msg, nil)
	if err != nil {
		return zero, err
	}
	p, err := a.e.Volatile(ctx, m)
	if err != nil {
		return zero, err
	}
	return decodeReply[R](e.name, p, nil)
}

func decodeReply[R any](name string, payload, encErr []byte) (R, error) {
	var r R
	if len(encErr) > 0 {
		return r, errs.Decode(encErr)
	}
	if len(payload) == 0 {
		return r, nil
	}
	if err := json.Unmarshal(payload, &r); err != nil {
		return r, errs.Wrap(errs.CodeDecode, err, "entity "+name+": cannot decode reply")
	}
	return r, nil
}

type messageKey struct{}

// MessageInfo describes the message a handler is running.
type MessageInfo struct {
	ID       int64
	Shard    string
	Attempt  int
	Tag      string
	Headers  map[string]string
	Enqueued time.Time
}

func withMessage(ctx context.Context, m store.Message) context.Context {
	return context.WithValue(ctx, messageKey{}, MessageInfo{ID: m.ID, Shard: m.Shard, Attempt: m.Attempts, Tag: m.Tag, Headers: m.Headers, Enqueued: m.CreatedAt})
}

// CurrentMessage returns the message a handler runs, if ctx is a handler's.
func CurrentMessage(ctx context.Context) (MessageInfo, bool) {
	mi, ok := ctx.Value(messageKey{}).(MessageInfo)
	return mi, ok
}
