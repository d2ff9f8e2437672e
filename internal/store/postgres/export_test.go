package postgres

// LockKey exposes the advisory lock key of a name to the tests.
func (s *Store) LockKey(name string) int64 { return s.lockKey(name) }

// HeadsSQL is Dequeue's heads statement, walking the partitions or
// ranking the whole queue, for the tests that compare the two and read
// their plans.
func HeadsSQL(walk, byOwner bool) string { return headsSQL(walk, byOwner) }

// The other queue statements, for the tests that read their plans.
var (
	SQLQueueSlots = sqlQueueSlots
	SQLQueueStats = sqlQueueStats
)

// HeadsWalkMax is the most partitions Dequeue walks.
const HeadsWalkMax = headsWalkMax
