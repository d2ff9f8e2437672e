package sqlite

// Statements the external tests EXPLAIN.
var (
	DequeueDueSQL   = dequeueDueSQL
	DequeueSlotsSQL = dequeueSlotsSQL
	DequeueHeadsSQL = dequeueHeadsSQL
	DequeueMarkSQL  = dequeueMarkSQL
	QueueStatsSQL   = queueStatsSQL
)
