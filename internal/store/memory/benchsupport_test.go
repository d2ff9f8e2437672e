package memory_test

import (
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
	"github.com/voltro/voltro/internal/store/storetest"
)

// The memory store has no database of its own to measure: every case is
// skipped with the reason the benchmark gives.
func TestBenchSupport(t *testing.T) {
	storetest.RunBenchSupport(t, func(t *testing.T, now func() time.Time) store.Driver { return memory.New(memory.WithClock(now)) })
}
