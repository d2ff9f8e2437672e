package workflow

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// A workflow's panic stack used to be stored in the run's error and handed
// to whoever awaited it: the error has the value and code, the log the stack.
func TestWorkflowPanicStackGoesToLogOnly(t *testing.T) {
	var buf bytes.Buffer
	c := &Context{exec: store.Execution{ID: "wf-1"}, log: slog.New(slog.NewTextHandler(&buf, nil))}
	d := &definition{name: "pay", fn: func(*Context, []byte) ([]byte, error) { panic("boom 42") }}
	_, oc := (&Engine{}).execute(c, d)
	if oc.kind != "failed" || !errors.Is(oc.err, errs.ErrHandlerPanic) || !strings.Contains(oc.err.Error(), "boom 42") {
		t.Fatalf("outcome %+v, want failed with handler_panic and the value", oc)
	}
	if s := oc.err.Error(); strings.Contains(s, "goroutine") || strings.Contains(s, "\n") || strings.Contains(s, ".go:") {
		t.Fatalf("the run's error carries the stack: %q", s)
	}
	if !strings.Contains(buf.String(), "goroutine") || !strings.Contains(buf.String(), "boom 42") {
		t.Fatalf("the log lacks the stack: %q", buf.String())
	}
}
