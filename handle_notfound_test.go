// What a result wait does for a run that is not stored: a handle from a
// plain Start knows its run was committed, so a run deleted since is
// ErrNotFound at once; GetHandle (and Client.Await) of an unknown id waits
// until ctx ends, since it may be a StartTx start not committed yet.

package voltro_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/voltro/voltro"
)

func TestHandleOfDeletedRunIsNotFound(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	db := txSQLite(t)
	app := txApp(t, db.url, "50ms", clientWait)
	h, err := clientWait.Start(ctx, app, greetIn{Name: "gone"})
	if err != nil {
		t.Fatal(err)
	}
	waitSuspended(t, app, h.ID)
	if _, err := db.pool(t).ExecContext(ctx, "DELETE FROM voltro_workflow_executions WHERE id = ?", h.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Result(ctx); !errors.Is(err, voltro.ErrNotFound) {
		t.Fatalf("the result of a started run deleted since: %v, want ErrNotFound", err)
	}
	// An unknown id through GetHandle: waited for until ctx ends.
	short, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	defer stop()
	if _, err := voltro.GetHandle[string](app, "wf_unknown").Result(short); !errors.Is(err, voltro.ErrDeadline) {
		t.Fatalf("GetHandle of an unknown id: %v, want ErrDeadline", err)
	}
}
