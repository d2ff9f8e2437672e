package memory_test

import (
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
	"github.com/voltro/voltro/internal/store/storetest"
)

func TestSchedules(t *testing.T) {
	storetest.RunSchedules(t, func(t *testing.T, now func() time.Time) store.Driver { return memory.New(memory.WithClock(now)) }, storetest.Options{})
}
