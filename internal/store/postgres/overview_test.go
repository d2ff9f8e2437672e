package postgres_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/storetest"
	"github.com/voltro/voltro/internal/testdb"
)

func TestOverview(t *testing.T) {
	var n atomic.Int32
	storetest.RunOverview(t, func(t *testing.T) store.Driver {
		return open(t, testdb.Postgres(t, fmt.Sprintf("pgov%d", n.Add(1))))
	})
}
