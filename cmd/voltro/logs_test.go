package main

// voltro logs --help says what --tail counts and what --boot adds.
// go test ./cmd/voltro -run LogsHelp -update rewrites the golden file.

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var updateCLIGolden = flag.Bool("update", false, "rewrite the golden files in testdata")

func cliGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateCLIGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (run with -update if the change is meant):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestLogsHelp(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"logs", "--help"}, func(string) string { return "" }, &out, &errb); code != 0 {
		t.Fatalf("logs --help exited %d", code)
	}
	cliGolden(t, "logs_help.golden", append(out.Bytes(), errb.Bytes()...))
}
