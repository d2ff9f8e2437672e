package status_test

import (
	"errors"
	"github.com/voltro/voltro/internal/status"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/config"
	"github.com/voltro/voltro/internal/inspect"
	"github.com/voltro/voltro/internal/registry"
)

// A loopback runner is flagged when its instance says so or cannot be
// asked, and not when it answers that the single host was declared.
func TestLocalhostFlagFollowsTheInstance(t *testing.T) {
	in := registry.Instance{ReplicaID: "api-0", RunnerAddress: "127.0.0.1:34000", InspectAddr: "127.0.0.1:9", Dialect: "postgres", Source: registry.SourceRunners}
	doc := inspect.Doc{ReplicaID: "api-0", RunnerAddress: "127.0.0.1:34000", Dialect: "postgres", Tier: "full"}
	if r := status.Row(in, doc, nil, 0, 30*time.Second); r.LocalhostRisk {
		t.Fatalf("an instance that declared VOLTRO_SINGLE_HOST is flagged: %+v", r)
	}
	doc.LocalhostRisk = true
	if r := status.Row(in, doc, nil, 0, 30*time.Second); !r.LocalhostRisk || r.LocalhostFix != config.LocalhostFix {
		t.Fatalf("an instance at risk is not flagged: %+v", r)
	}
	if r := status.Row(in, inspect.Doc{}, errors.New("connection refused"), 0, 30*time.Second); !r.LocalhostRisk {
		t.Fatalf("an unreachable loopback runner is not flagged: %+v", r)
	}
	if !strings.Contains(config.LocalhostFix, "VOLTRO_SINGLE_HOST=1") {
		t.Fatal("the fix names no way to declare a single host")
	}
}
