// The demo tick's schedule (config resolves its period).
package schedule

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestDemoTick(t *testing.T) {
	t.Parallel()
	st := NewMemoryStore()
	logs := &syncBuffer{}
	s := newTestScheduler(t, Config{ReplicaID: "demo", Store: st})
	if err := s.Register(DemoTick(time.Second, slog.New(slog.NewTextHandler(logs, nil)))); err != nil {
		t.Fatal(err)
	}
	stop := runScheduler(t, s)
	time.Sleep(1300 * time.Millisecond)
	stop()
	if rs := runsOf(t, st, DemoTickName); len(rs) == 0 || rs[0].Status != StatusSucceeded || !strings.Contains(logs.String(), "demo.tick") {
		t.Fatalf("demo tick did not fire: %+v\n%s", rs, logs)
	}
}
