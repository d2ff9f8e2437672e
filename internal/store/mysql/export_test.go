// Test-only access to internals.
package mysql

import "github.com/voltro/voltro/internal/store"

// LockerConnID is the server connection id of a locker's reserved session.
func LockerConnID(l store.Locker) int64 { return l.(*locker).connID }
