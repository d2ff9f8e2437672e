package engine

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/inspect"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/memory"
	"github.com/voltro/voltro/internal/testwait"
)

// Readiness is about this instance: a backlog for a type no instance
// hosts leaves every instance ready, and the cluster health route (same
// token and method rules as the others) is 503 naming it.
func TestUnhostedBacklogIsAClusterCondition(t *testing.T) {
	d := memory.New()
	ctx := context.Background()
	var es []*Engine
	for _, name := range []string{"a", "b"} {
		cfg := clusterConfig(t, name)
		cfg.InspectToken = "tok"
		e := startEngine(t, d, cfg)
		e.Register("echo", echo, EntityOptions{})
		es = append(es, e)
	}
	testwait.For(t, 10*time.Second, "shards split", func() bool {
		return len(es[0].Runner().Held())+len(es[1].Runner().Held()) == 30 && len(es[0].Runner().Held()) > 0 && len(es[1].Runner().Held()) > 0
	})
	if _, err := es[0].Send(ctx, Message{EntityType: "workflow/nosuch", EntityID: "x", Payload: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	call := func(e *Engine, method, path, token string) (int, string) {
		req, _ := http.NewRequest(method, "http://"+e.InspectAddr()+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, e := range es {
		testwait.For(t, 3*time.Second, "the unhosted backlog seen", func() bool {
			_, body := call(e, "GET", inspect.PathClusterHealth, "tok")
			return strings.Contains(body, `"workflow/nosuch"`)
		})
		// Past the stall threshold: still ready.
		time.Sleep(time.Until(e.started.Add(e.stallAfter() + time.Second)))
		if code, body := call(e, "GET", inspect.PathReady, "tok"); code != 200 || strings.Contains(body, "unhosted_type") {
			t.Fatalf("%s: readiness must stay 200 for a backlog nobody hosts: %d %s", e.cfg.ReplicaID, code, body)
		}
		code, body := call(e, "GET", inspect.PathClusterHealth, "tok")
		var ch inspect.ClusterHealth
		if err := json.Unmarshal([]byte(body), &ch); err != nil {
			t.Fatal(err)
		}
		if code != 503 || ch.Healthy || len(ch.Conditions) != 1 || ch.Conditions[0].Kind != "unhosted_type" ||
			ch.Conditions[0].EntityType != "workflow/nosuch" || ch.Conditions[0].Messages != 1 || len(ch.LiveRunners) != 2 {
			t.Fatalf("%s: cluster health: %d %s", e.cfg.ReplicaID, code, body)
		}
		if c, _ := call(e, "GET", inspect.PathClusterHealth, ""); c != 401 {
			t.Fatalf("cluster health without the token: %d", c)
		}
		if c, _ := call(e, "POST", inspect.PathClusterHealth, "tok"); c != 405 {
			t.Fatalf("cluster health by POST: %d", c)
		}
		if h := e.Inspect(ctx).Health; h.Drain.UnhostedBacklog["workflow/nosuch"] != 1 {
			t.Fatalf("inspect shows the unhosted backlog: %+v", h.Drain)
		}
	}
	n, err := d.DeadLetterBacklog(ctx, store.BacklogSelect{EntityType: "workflow/nosuch"}, "cleared", nil)
	if err != nil || n != 1 {
		t.Fatalf("dead-letter: %d %v", n, err)
	}
	testwait.For(t, 10*time.Second, "cluster healthy once the backlog is dead", func() bool {
		code, _ := call(es[1], "GET", inspect.PathClusterHealth, "tok")
		return code == 200
	})
}
