package voltrotest

// The App's logs, kept until the test ends and shown only if it failed.

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
)

// logBuffer is an io.Writer that many goroutines may write at once.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// quietLogger records at debug level into a buffer that t prints when it
// fails (registered first, so it runs after the App's Close).
func quietLogger(t testing.TB) (*slog.Logger, *logBuffer) {
	b := &logBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("voltrotest: the app's logs:\n%s", b.String())
		}
	})
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}
