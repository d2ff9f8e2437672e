package postgres_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/storetest"
	"github.com/voltro/voltro/internal/testdb"
)

func TestBacklog(t *testing.T) {
	var n atomic.Int32
	storetest.RunBacklog(t, func(t *testing.T, now func() time.Time) store.Driver {
		return openClock(t, testdb.Postgres(t, fmt.Sprintf("pgbacklog%d", n.Add(1))), now)
	})
}
