// The clock a store opened for a test environment reads, carried in the
// context that opens it (a driver's opener has no other way to be told).

package clock

import "context"

type ctxKey struct{}

// WithStore returns ctx carrying c for the store a driver opens with it.
func WithStore(ctx context.Context, c Clock) context.Context {
	return context.WithValue(ctx, ctxKey{}, c)
}

// StoreFrom is the clock ctx carries for the store, or nil: the store's
// own default (the wall clock).
func StoreFrom(ctx context.Context) Clock {
	c, _ := ctx.Value(ctxKey{}).(Clock)
	return c
}
