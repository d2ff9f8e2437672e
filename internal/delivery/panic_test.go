package delivery

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// A handler's panic stack used to go back to the caller (and into the
// message row) inside the error: the caller gets the value and code only,
// the stack goes to the log.
func TestHandlerPanicStackGoesToLogNotCaller(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	h := func(context.Context, store.Message) ([]byte, error) { panic("boom 42") }
	_, err := invoke(context.Background(), log, h, store.Message{ID: 4242, EntityType: "payments", EntityID: "p1"})
	if !errors.Is(err, errs.ErrHandlerPanic) || !strings.Contains(err.Error(), "boom 42") {
		t.Fatalf("err = %v, want handler_panic with the panic value", err)
	}
	for _, out := range []string{err.Error(), string(errs.Encode(err))} {
		if strings.Contains(out, "goroutine") || strings.Contains(out, "panic_test.go") || strings.Contains(out, "runtime/debug") || strings.Contains(out, "\n") {
			t.Fatalf("the caller's error carries the stack: %q", out)
		}
	}
	if logged := buf.String(); !strings.Contains(logged, "goroutine") || !strings.Contains(logged, "boom 42") || !strings.Contains(logged, "4242") {
		t.Fatalf("the log lacks the stack: %q", logged)
	}
}
