package status_test

// Golden files for the table, with and without colour, rendered from the
// fixed report. go test ./internal/status -run Golden -update rewrites them.

import (
	"bytes"
	"github.com/voltro/voltro/internal/status"
	"strings"
	"testing"

	"github.com/voltro/voltro/internal/golden"
)

func TestGoldenTable(t *testing.T) {
	var b bytes.Buffer
	if err := status.WriteTable(&b, fixtureReport(), false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "\033[") {
		t.Fatal("colour codes without colour")
	}
	golden.Check(t, "table.golden", b.Bytes())
}

func TestGoldenTableColour(t *testing.T) {
	var b bytes.Buffer
	if err := status.WriteTable(&b, fixtureReport(), true); err != nil {
		t.Fatal(err)
	}
	// The localhost runner's row is red.
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.Contains(l, "127.0.0.1:34000") && strings.HasPrefix(l, "api-1") {
			t.Fatalf("row not coloured: %q", l)
		}
		if strings.HasPrefix(l, status.AnsiRed+"api-1 ") && !strings.HasSuffix(l, status.AnsiReset) {
			t.Fatalf("red row not reset: %q", l)
		}
	}
	if !strings.Contains(b.String(), status.AnsiRed+"api-1 ") {
		t.Fatalf("the localhost runner is not red:\n%s", b.String())
	}
	golden.Check(t, "table_colour.golden", b.Bytes())
}

func TestGoldenTableEmpty(t *testing.T) {
	r := &status.Report{SchemaVersion: status.SchemaVersion, Source: status.Source{Kind: "registry", RegistryDir: "/tmp/voltro-run"}, ProcessFilter: "billing", Instances: []status.Instance{}}
	var b bytes.Buffer
	if err := status.WriteTable(&b, r, false); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "table_empty.golden", b.Bytes())
}
