package delivery

// Handler-written completions: a handler that writes its own durable outcome
// can mark its message processed in that same transaction (one commit instead
// of two) and tell the deliverer, which then writes no completion itself.

import "context"

type ackKey struct{}

// ack records that the handler completed its message itself.
type ack struct{ done bool }

func withAck(ctx context.Context) (context.Context, *ack) {
	a := &ack{}
	return context.WithValue(ctx, ackKey{}, a), a
}

// MarkCompleted tells the deliverer running ctx's handler that the message
// is already marked processed, with an empty reply, by a write the handler
// committed; it writes no completion of its own. Call it only after that
// write committed, and return a nil error.
func MarkCompleted(ctx context.Context) {
	if a, ok := ctx.Value(ackKey{}).(*ack); ok {
		a.done = true
	}
}
