package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/testdb"
	"github.com/voltro/voltro/internal/testwait"
)

// lockedBuf is an io.Writer tests read while the command writes.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// voltro dashboard without an inspect token answers a page of another
// site that rebinds its name to 127.0.0.1 with 421, and has the inspect
// server's limits: a request with 1 MB of headers is refused unread.
func TestDashboardCommandRefusesRebindingAndBigHeaders(t *testing.T) {
	t.Setenv("VOLTRO_REGISTRY_DIR", t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env := map[string]string{"DB_URL": "sqlite:" + filepath.Join(t.TempDir(), "dash.db")}
	var out, errb lockedBuf
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"dashboard", "--addr", "127.0.0.1:0"}, func(k string) string { return env[k] }, &out, &errb)
	}()
	var addr string
	testwait.For(t, 20*time.Second, "the dashboard's address", func() bool {
		if m := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/`).FindStringSubmatch(out.String()); m != nil {
			addr = m[1]
			return true
		}
		return false
	})
	ask := func(host string, header string) (int, string, http.Header) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/_voltro/ui/api/runs", nil)
		req.Host = host
		if header != "" {
			req.Header.Set("X-Big", header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	if code, body, _ := ask("evil.example:8780", ""); code != http.StatusMisdirectedRequest || strings.Contains(body, "runs") && strings.Contains(body, "[") {
		t.Fatalf("Host evil.example: %d %.200s", code, body)
	}
	code, body, h := ask(addr, "")
	if code != http.StatusOK || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" {
		t.Fatalf("Host %s: %d %v %.200s", addr, code, h, body)
	}
	if code, _, _ := ask(addr, strings.Repeat("a", 1<<20)); code != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("1 MB of headers: %d", code)
	}
	cancel()
	if c := <-done; c != 0 {
		t.Fatalf("exit %d: %s", c, errb.String())
	}
}

// voltro demo prints the database URL it runs on without its password.
func TestDemoDoesNotPrintThePassword(t *testing.T) {
	t.Setenv("VOLTRO_REGISTRY_DIR", t.TempDir())
	url := testdb.Postgres(t, "demopw")
	withPw := strings.Replace(url, "://postgres@", "://postgres:s3cr3t-pw@", 1)
	if withPw == url {
		t.Skipf("no user@ to add a password to in %s", url)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env := map[string]string{"VOLTRO_INSPECT_ADDR": "127.0.0.1:0"}
	var out, errb lockedBuf
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"demo", "--db", withPw}, func(k string) string { return env[k] }, &out, &errb)
	}()
	testwait.For(t, 20*time.Second, "the welcome", func() bool { return strings.Contains(out.String(), "voltro demo is running on") })
	cancel()
	<-done
	if strings.Contains(out.String()+errb.String(), "s3cr3t-pw") {
		t.Fatalf("the demo printed the password:\n%s\n%s", out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "postgres:xxxxx@") {
		t.Fatalf("the welcome does not name the database:\n%s", out.String())
	}
}
