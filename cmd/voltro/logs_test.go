package main

// voltro logs --help says what --tail counts and what --boot adds.
// go test ./cmd/voltro -run LogsHelp -update rewrites the golden file.

import (
	"bytes"
	"context"
	"testing"

	"github.com/voltro/voltro/internal/golden"
)

func TestLogsHelp(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"logs", "--help"}, func(string) string { return "" }, &out, &errb); code != 0 {
		t.Fatalf("logs --help exited %d", code)
	}
	golden.Check(t, "logs_help.golden", append(out.Bytes(), errb.Bytes()...))
}
