package e2e

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/demo"
	"github.com/voltro/voltro/internal/inspect"
	"github.com/voltro/voltro/internal/testdb"
	"github.com/voltro/voltro/internal/testwait"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) count(substr string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Count(s.b.String(), substr)
}

// An attacker on loopback guesses the admin token of an instance's
// inspect server, on the admin route and the dashboard's action: after
// inspect.GuessMax wrong tokens within a minute its address gets 429 (even
// with the right token, until the minute ends), the guesses are logged in
// two lines, and the run it tried to cancel runs on.
func TestAdminTokenGuessingIsBraked(t *testing.T) {
	url := testdb.Postgres(t, "adminguess")
	var logs syncBuf
	env := map[string]string{"DB_URL": url, "POD_NAME": "guessed", "VOLTRO_ADMIN_TOKEN": "admin-0123456789abcdef",
		"VOLTRO_WORKFLOW_RUNNER_HOST": "127.0.0.1", "VOLTRO_WORKFLOW_RUNNER_PORT": strconv.Itoa(freePort(t))}
	ctx := context.Background()
	app, err := voltro.New(ctx, voltro.WithEnv(func(k string) string { return env[k] }), voltro.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Register(demo.Nap); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close(context.Background()) })
	h, err := demo.Nap.Start(ctx, app, demo.NapInput{Seconds: 3600})
	if err != nil {
		t.Fatal(err)
	}
	post := func(path, token string) int {
		req, _ := http.NewRequest(http.MethodPost, "http://"+app.InspectAddr()+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	paths := []string{"/_voltro/admin/workflows/" + h.ID + "/cancel", "/_voltro/ui/api/runs/" + h.ID + "/cancel"}
	codes := map[int]int{}
	const tries = 200
	for i := range tries {
		codes[post(paths[i%2], "guess-"+strconv.Itoa(i))]++
	}
	if codes[http.StatusUnauthorized] != inspect.GuessMax || codes[http.StatusTooManyRequests] != tries-inspect.GuessMax {
		t.Fatalf("answers to %d guesses: %v", tries, codes)
	}
	if code := post(paths[0], env["VOLTRO_ADMIN_TOKEN"]); code != http.StatusTooManyRequests {
		t.Fatalf("the right token from the guessing address, within the minute: %d", code)
	}
	testwait.For(t, 5*time.Second, "the guesses logged", func() bool {
		return logs.count("admin: too many wrong admin tokens") == 1
	})
	if n := logs.count(`"msg":"admin:`); n != 2 {
		t.Fatalf("%d admin log lines for %d guesses, want 2", n, tries)
	}
	st, err := app.Get(ctx, h.ID)
	if err != nil || st.CancelAsked || st.Status.Terminal() {
		t.Fatalf("the run: %+v %v", st, err)
	}
}
