package postgres

// LockKey exposes the advisory lock key of a name to the tests.
func (s *Store) LockKey(name string) int64 { return s.lockKey(name) }
