package cli_test

// `voltro logs` text lines say each attribute once: one the message already
// says as key=value is left out. go test ./internal/observe/cli -run
// FormatRecord -update rewrites the golden file.

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/golden"
	"github.com/voltro/voltro/internal/observe"
	"github.com/voltro/voltro/internal/observe/cli"
	"github.com/voltro/voltro/internal/observe/obstest"
)

func TestFormatRecordSaysEachAttributeOnce(t *testing.T) {
	at := time.Date(2026, 11, 30, 13, 21, 50, 389_000_000, time.UTC)
	recs := []observe.Record{
		{Time: at, Level: "INFO", Replica: "api-0", Msg: "workflow engine: cluster-sql, dialect=postgres",
			Attrs: map[string]any{"dialect": "postgres", "runner_storage": "sql", "why": "shared SQL store", "tier": 1}},
		{Time: at, Level: "INFO", Replica: "api-0", Msg: "sql dialect resolved: postgres — CDC: in-process bus",
			Attrs: map[string]any{"cdc": "bus", "replica": "api-0", "component": "cdc"}},
		{Time: at, Level: "INFO", Replica: "api-0", Msg: "schedule fired", Attrs: map[string]any{"replicaId": "api-0", "schedule": "demo.tick"}},
		{Time: at, Level: "INFO", Replica: "api-0", Msg: "voltro started: replica=api-0 runner=10.1.2.3:34000 dialect=postgres cdc=in-process bus coordination=advisoryLock inspect=127.0.0.1:9000",
			Attrs: map[string]any{"cdc": "in-process bus", "inspect": "127.0.0.1:9000", "version": "0.1.0"}},
		// a key=value that is only part of a word is not the attribute
		{Time: at, Level: "DEBUG", Replica: "api-10", Msg: "shard-lock coordination: row-based (dialect=postgresql, mode=auto)",
			Attrs: map[string]any{"dialect": "postgres", "xmode": "auto", "mode": "au"}},
		{Time: at, Level: "WARN", Replica: "api-0", Msg: "workflow resumed", Attrs: map[string]any{"workflow": "order", "journaled": 2}},
	}
	var b strings.Builder
	for _, r := range recs {
		b.WriteString(cli.FormatRecord(r, 6, false) + "\n")
	}
	golden.Check(t, "records.golden", []byte(b.String()))
}

// --tail N prints N lines, boot records or not; --boot puts each instance's
// boot records first and the N after them.
func TestLogsTailPrintsNLines(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("VOLTRO_REGISTRY_DIR", dir)
	ctx := obstest.Ctx(t)
	app := obstest.Start(t, "sqlite:"+filepath.Join(t.TempDir(), "tail.db"), obstest.App{Replica: "obs-tail"})
	for i := range 5 {
		app.Logger().Info("obs.test after boot", "i", i)
	}
	o := cli.LogsOptions{RegistryDir: dir, Level: "info", Tail: 3}
	var out, errb bytes.Buffer
	if err := cli.Logs(ctx, o, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	golden.Check(t, "tail3.golden", []byte(untimed(out.String())))

	out.Reset()
	o.Boot = true
	if err := cli.Logs(ctx, o, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(untimed(out.String())), "\n")
	if len(lines) < 4+3 || !strings.Contains(strings.Join(lines, "\n"), "voltro started:") {
		t.Fatalf("--boot --tail 3:\n%s", out.String())
	}
	if got := strings.Join(lines[len(lines)-3:], "\n") + "\n"; got != string(mustRead(t, "tail3.golden")) {
		t.Fatalf("--boot --tail 3 does not end with the 3 records of --tail 3:\n%s", out.String())
	}
}

// untimed drops the timestamp of every line.
func untimed(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		_, rest, _ := strings.Cut(l, " ")
		b.WriteString(rest + "\n")
	}
	return b.String()
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
