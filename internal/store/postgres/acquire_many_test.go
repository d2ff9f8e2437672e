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

func TestAcquireMany(t *testing.T) {
	var n atomic.Int32
	var last string
	storetest.RunAcquireMany(t, func(t *testing.T, now func() time.Time) store.Driver {
		last = testdb.Postgres(t, fmt.Sprintf("pgmany%d", n.Add(1)))
		return openClock(t, last, now)
	}, storetest.Options{Reopen: func(t *testing.T, _ store.Driver, now func() time.Time) store.Driver { return openClock(t, last, now) }})
}
