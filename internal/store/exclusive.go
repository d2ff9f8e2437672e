// Stores that allow one executing engine per database.

package store

// Exclusive is implemented by stores whose database one executing engine
// at a time may use (SQLite: one file, one process). The engine that opened
// the store acquires it before migrating or reading a message, and calls
// release when it stops; an error with code errs.CodeLocked means another
// engine holds it.
type Exclusive interface {
	AcquireOwnership() (release func() error, err error)
}
