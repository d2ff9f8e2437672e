package workflow

// The introspection writer does not hold shutdown: a write that ignores its
// context (a MySQL COMMIT to a paused server blocks in a read the context
// does not reach) is abandoned by close after introCloseWait.

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
)

// stuckIntro is a WorkflowIntrospection whose Record blocks until release,
// whatever its context says.
type stuckIntro struct {
	entered chan struct{}
	release chan struct{}
}

func (s stuckIntro) Record(context.Context, store.IntrospectionBatch) error {
	s.entered <- struct{}{}
	<-s.release
	return nil
}

func (stuckIntro) RunSteps(context.Context, string) ([]store.StepRecord, error)   { return nil, nil }
func (stuckIntro) RunEvents(context.Context, string) ([]store.EventRecord, error) { return nil, nil }

func TestRecorderCloseDoesNotWaitOnAStuckWrite(t *testing.T) {
	in := stuckIntro{entered: make(chan struct{}, 1), release: make(chan struct{})}
	defer close(in.release)
	r := newRecorder(in, "r-0", slog.New(slog.NewTextHandler(io.Discard, nil)))
	r.event("wf_1", "started", "")
	<-in.entered // the write is in flight and will not return
	start := time.Now()
	closed := make(chan struct{})
	go func() { r.close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(introCloseWait + time.Minute):
		t.Fatal("close waited on a write that does not return")
	}
	if d := time.Since(start); d < introCloseWait {
		t.Fatalf("close returned after %s, before giving the write introCloseWait", d)
	}
}
