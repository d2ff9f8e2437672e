// A graceful Close logs no ERROR: the lock calls that the shutdown itself
// cuts short are no storage failure.

package voltro_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"

	"github.com/voltro/voltro"
)

// levelRecorder keeps every record at ERROR or above that reaches it.
type levelRecorder struct {
	mu     *sync.Mutex
	errors *[]string
}

func (h levelRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h levelRecorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h levelRecorder) WithGroup(string) slog.Handler            { return h }
func (h levelRecorder) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		h.mu.Lock()
		defer h.mu.Unlock()
		msg := r.Message
		r.Attrs(func(a slog.Attr) bool { msg += " " + a.String(); return true })
		*h.errors = append(*h.errors, msg)
	}
	return nil
}

func TestCloseSoonAfterStartLogsNoError(t *testing.T) {
	t.Setenv("VOLTRO_REGISTRY_DIR", t.TempDir())
	ctx := context.Background()
	rec := levelRecorder{mu: new(sync.Mutex), errors: new([]string)}
	for i := range 5 {
		db := "sqlite:" + filepath.Join(t.TempDir(), "close.db")
		env := map[string]string{"VOLTRO_INSPECT_ADDR": "127.0.0.1:0"}
		app, err := voltro.New(ctx, voltro.WithDB(db), voltro.WithLogger(slog.New(rec)),
			voltro.WithEnv(func(k string) string { return env[k] }))
		if err != nil {
			t.Fatal(err)
		}
		if err := app.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := app.Close(ctx); err != nil {
			t.Fatalf("close %d: %v", i, err)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, e := range *rec.errors {
		t.Errorf("ERROR record on a graceful close: %s", e)
	}
}
