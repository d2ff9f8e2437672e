package memory_test

import (
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
	"github.com/voltro/voltro/internal/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) store.Driver { return memory.New(memory.WithClock(now)) }, storetest.Options{Parallel: true})
}

func TestWorkflowConformance(t *testing.T) {
	storetest.RunWorkflows(t, func(t *testing.T, now func() time.Time) store.Driver { return memory.New(memory.WithClock(now)) })
}
