// The event stream on the instance's own kind of server: rpc.Bounded,
// whose write and read timeouts bound a whole response, must not cut a
// stream that is still being read.

package dashboard_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/dashboard"
	"github.com/voltro/voltro/internal/rpc"
	"github.com/voltro/voltro/internal/store/memory"
)

// TestStreamOutlivesServerTimeouts: a stream served through rpc.Bounded
// with 200 ms timeouts stays open across many of them and still delivers
// an event written long after they passed.
func TestStreamOutlivesServerTimeouts(t *testing.T) {
	d, err := dashboard.New(dashboard.Config{Store: memory.New(), PollEvery: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := rpc.Bounded(d.Handler(), 1<<20, 8, 200*time.Millisecond, slog.New(slog.DiscardHandler))
	srv.ReadTimeout = 200 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { d.Close(); _ = srv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+ln.Addr().String()+dashboard.Prefix+"api/stream", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	start := time.Now()
	buf := make([]byte, 4096)
	var got strings.Builder
	// two ticks: the second comes 3 s in, fifteen timeouts later
	for strings.Count(got.String(), "event: tick") < 2 {
		n, err := resp.Body.Read(buf)
		if err != nil {
			t.Fatalf("the stream ended after %v: %v (%q)", time.Since(start).Round(time.Millisecond), err, got.String())
		}
		got.Write(buf[:n])
	}
}
