package store

// Wake-ups a store pushes by itself (a capability: Capabilities.Wakes).

import "context"

// WakeKind says what a Wake is about.
type WakeKind string

const (
	WakeMessage WakeKind = "message" // a message was enqueued (or replayed)
	WakeReply   WakeKind = "reply"   // a final reply was stored
)

// Wake is a push notification from a store with a native feed.
type Wake struct {
	Kind  WakeKind
	Shard string // for WakeMessage
	ID    int64  // message id (the request id for WakeReply)
}

// WakeListener pushes wake-ups (PostgreSQL LISTEN/NOTIFY; a capability,
// Capabilities.Wakes). ListenWakes blocks on a dedicated connection, calling fn for
// every wake, reconnecting on failure, until ctx ends. After a reconnect it
// calls fn with a zero Wake, meaning "you may have missed some: re-read".
type WakeListener interface {
	ListenWakes(ctx context.Context, fn func(Wake)) error
}
