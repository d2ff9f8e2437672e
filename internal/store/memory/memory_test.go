package memory_test

import (
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
	"github.com/voltro/voltro/internal/store/storetest"
)

// The whole contract; the memory store has no capability beyond it, so
// the transactional and benchmark cases are skipped, saying so.
func TestConformance(t *testing.T) {
	storetest.Exercise(t, func(t *testing.T, now func() time.Time) store.Driver { return memory.New(memory.WithClock(now)) }, storetest.Options{Parallel: true})
}
