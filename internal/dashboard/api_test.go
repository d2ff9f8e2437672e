package dashboard_test

// The JSON API without a browser: bad input is refused with a clear
// error, pages follow the keyset cursor, the tokens guard what they
// guard, and the stream polls where there is no feed, only while open.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/dashboard"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
	"github.com/voltro/voltro/internal/testwait"
)

func serve(t *testing.T, c dashboard.Config) (*httptest.Server, *memory.Store) {
	t.Helper()
	m := memory.New()
	if c.Store == nil {
		c.Store = m
	}
	d, err := dashboard.New(c)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(func() { d.Close(); srv.Close() })
	return srv, m
}

func call(t *testing.T, method, url, bearer, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestRunsPagesAndBadInput(t *testing.T) {
	srv, m := serve(t, dashboard.Config{})
	ctx := context.Background()
	for i := range 5 {
		id := fmt.Sprintf("run%d", i)
		x := store.Execution{ID: id, Name: "order", Shard: "default/0", Input: []byte(`{}`)}
		if _, _, _, err := m.StartExecution(ctx, x, store.StartContext{}, &store.Message{Shard: "default/0", EntityType: "workflow/order", EntityID: id, Tag: "start"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	next := ""
	for pages := 0; pages < 5; pages++ {
		code, body := call(t, "GET", srv.URL+dashboard.Prefix+"api/runs?limit=2&after="+next, "", "")
		if code != 200 {
			t.Fatalf("page: %d %s", code, body)
		}
		var p struct {
			Runs []struct{ ID string }
			Next string
		}
		if err := json.Unmarshal([]byte(body), &p); err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Runs {
			got = append(got, r.ID)
		}
		if next = p.Next; next == "" {
			break
		}
	}
	if strings.Join(got, ",") != "run4,run3,run2,run1,run0" {
		t.Fatalf("pages of two: %v", got)
	}
	for q, want := range map[string]string{
		"status=bogus":       "status \"bogus\"",
		"limit=0":            "limit \"0\"",
		"limit=201":          "limit \"201\"",
		"since=yesterday":    "since \"yesterday\" is not an RFC 3339 time",
		"after=not-a-cursor": "is not a cursor",
	} {
		code, body := call(t, "GET", srv.URL+dashboard.Prefix+"api/runs?"+q, "", "")
		var e struct{ Error string }
		_ = json.Unmarshal([]byte(body), &e)
		if code != http.StatusBadRequest || !strings.Contains(e.Error, want) {
			t.Errorf("?%s: %d %s, want 400 saying %q", q, code, body, want)
		}
	}
	if code, body := call(t, "GET", srv.URL+dashboard.Prefix+"api/runs/nosuch", "", ""); code != http.StatusNotFound {
		t.Errorf("unknown run: %d %s", code, body)
	}
}

func TestTokens(t *testing.T) {
	srv, _ := serve(t, dashboard.Config{ReadOnly: dashboard.ReadOnly("read-secret"), AdminToken: "admin-secret"})
	api := srv.URL + dashboard.Prefix + "api/"
	if code, _ := call(t, "GET", srv.URL+dashboard.Prefix, "", ""); code != 200 {
		t.Errorf("the page (no data) needs no token: %d", code)
	}
	if code, _ := call(t, "GET", api+"runs", "", ""); code != http.StatusUnauthorized {
		t.Errorf("a read without the inspect token: %d", code)
	}
	if code, _ := call(t, "GET", api+"runs", "read-secret", ""); code != 200 {
		t.Errorf("a read with it: %d", code)
	}
	if code, body := call(t, "POST", api+"messages/1/replay", "read-secret", ""); code != http.StatusUnauthorized || !strings.Contains(body, "admin token") {
		t.Errorf("an action with the inspect token only: %d %s", code, body)
	}
	if code, body := call(t, "POST", api+"messages/1/replay", "admin-secret", ""); code != http.StatusNotFound {
		t.Errorf("an action with the admin token reaches the store (no dead letter 1): %d %s", code, body)
	}
	if code, _ := call(t, "GET", api+"messages/1/replay", "admin-secret", ""); code == 200 {
		t.Error("an action answered a GET")
	}
	off, _ := serve(t, dashboard.Config{})
	if code, body := call(t, "POST", off.URL+dashboard.Prefix+"api/messages/1/replay", "anything", ""); code != http.StatusForbidden || !strings.Contains(body, "VOLTRO_ADMIN_TOKEN is set") {
		t.Errorf("an action while no admin token is set: %d %s", code, body)
	}
	if code, body := call(t, "POST", api+"backlog/dead", "admin-secret", `{"entityType":`); code != http.StatusBadRequest {
		t.Errorf("a broken body: %d %s", code, body)
	}
}

// TestStreamPollsOnlyWhileOpen: without a feed the stream ticks, and its
// source runs only while a stream is open.
func TestStreamPollsOnlyWhileOpen(t *testing.T) {
	srv, _ := serve(t, dashboard.Config{PollEvery: 10 * time.Millisecond})
	// bounded, so a stream that never ticks fails the test instead of hanging it
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+dashboard.Prefix+"api/stream", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	buf := make([]byte, 4096)
	var got strings.Builder
	for !strings.Contains(got.String(), "event: tick") {
		n, err := resp.Body.Read(buf)
		if err != nil {
			t.Fatalf("stream ended before a tick: %v (%q)", err, got.String())
		}
		got.Write(buf[:n])
	}
	if !strings.Contains(got.String(), `"mode":"poll 10ms"`) {
		t.Fatalf("the stream did not say it polls: %q", got.String())
	}
	if tickers() == 0 {
		t.Fatal("no ticker goroutine while the stream ticks")
	}
	cancel()
	resp.Body.Close()
	// the ticks stop with the stream: its ticker goroutine ends
	testwait.For(t, 10*time.Second, "the stream's ticker to stop once it closed", func() bool { return tickers() == 0 })
}

// tickers counts the goroutines of the stream's ticker (Dashboard.tick).
func tickers() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "dashboard.(*Dashboard).tick.func")
		}
		buf = make([]byte, 2*len(buf))
	}
}
