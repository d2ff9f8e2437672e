package engine

// Liveness and readiness with an inspect token set: a probe that sends no
// Authorization header (a kubelet's) gets the verdict and nothing else; a
// wrong bearer is refused; every other route still wants the token.

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/inspect"
	"github.com/voltro/voltro/internal/store/memory"
	"github.com/voltro/voltro/internal/testwait"
)

func TestProbesNeedNoTokenAndSeeOnlyTheVerdict(t *testing.T) {
	cfg := clusterConfig(t, "p")
	cfg.InspectToken = "tok"
	e := startEngine(t, memory.New(), cfg)
	e.Register("echo", echo, EntityOptions{})
	testwait.For(t, 5*time.Second, "shards", ownsAll(e))
	call := func(method, path, auth string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+e.InspectAddr()+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var doc map[string]any
		if method == http.MethodGet {
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatalf("%s %s: %v: %s", method, path, err, b)
			}
		}
		return resp.StatusCode, doc
	}

	// Without a header: the verdict only, one key.
	if code, doc := call("GET", inspect.PathLive, ""); code != 200 || len(doc) != 1 || doc["live"] != true {
		t.Fatalf("live without a token: %d %v", code, doc)
	}
	testwait.For(t, 5*time.Second, "ready", func() bool { code, _ := call("GET", inspect.PathReady, ""); return code == 200 })
	if code, doc := call("GET", inspect.PathReady, ""); code != 200 || len(doc) != 1 || doc["ready"] != true {
		t.Fatalf("ready without a token: %d %v", code, doc)
	}
	if code, _ := call("HEAD", inspect.PathReady, ""); code != 200 {
		t.Fatalf("HEAD ready without a token: %d", code)
	}
	// With the token: the full body.
	if code, doc := call("GET", inspect.PathReady, "Bearer tok"); code != 200 || doc["drain"] == nil {
		t.Fatalf("ready with the token: %d %v", code, doc)
	}
	if code, doc := call("GET", inspect.PathLive, "Bearer tok"); code != 200 || doc["replicaId"] != "p" {
		t.Fatalf("live with the token: %d %v", code, doc)
	}
	// A wrong bearer, another method, another route: refused as before.
	for _, c := range []struct {
		method, path, auth string
		want               int
	}{
		{"GET", inspect.PathReady, "Bearer nope", 401},
		{"GET", inspect.PathLive, "Basic eDp5", 401},
		{"POST", inspect.PathReady, "", 405},
		{"GET", inspect.PathInspect, "", 401},
		{"GET", inspect.PathClusterHealth, "", 401},
	} {
		if code, _ := call(c.method, c.path, c.auth); code != c.want {
			t.Errorf("%s %s (Authorization %q): %d, want %d", c.method, c.path, c.auth, code, c.want)
		}
	}
}
