package memory_test

import (
	"testing"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
	"github.com/voltro/voltro/internal/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Driver { return memory.New() }, storetest.Options{})
}

func TestWorkflowConformance(t *testing.T) {
	storetest.RunWorkflows(t, func(t *testing.T) store.Driver { return memory.New() })
}
