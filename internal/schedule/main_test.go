// TestMain doubles as the replica process of the multi-process tests: with
// VOLTRO_SCHEDPROC=1 the test binary runs one scheduler against DB_URL until
// it is signalled, instead of running tests.
package schedule

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if os.Getenv("VOLTRO_SCHEDPROC") == "1" {
		if err := schedProc(); err != nil {
			fmt.Fprintln(os.Stderr, "schedproc:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// schedProc is one replica: a one-second schedule (VOLTRO_SCHEDPROC_SCHEDULE,
// default "soak") whose runs
// are only its records, coordinated as VOLTRO_SCHEDPROC_COORDINATION says,
// with a clock VOLTRO_SCHEDPROC_SKEW ahead of the machine's.
func schedProc() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	skew, err := time.ParseDuration(orDefault(os.Getenv("VOLTRO_SCHEDPROC_SKEW"), "0s"))
	if err != nil {
		return err
	}
	coord, err := ParseCoordination(os.Getenv("VOLTRO_SCHEDPROC_COORDINATION"))
	if err != nil {
		return err
	}
	st, err := OpenURL(ctx, os.Getenv("DB_URL"), "")
	if err != nil {
		return err
	}
	defer st.Close()
	replica := os.Getenv("VOLTRO_SCHEDPROC_REPLICA")
	s, err := New(Config{
		ReplicaID:      replica,
		Store:          st,
		Default:        coord,
		Logger:         slog.New(slog.NewTextHandler(os.Stderr, nil)),
		Now:            func() time.Time { return time.Now().Add(skew) },
		GCInterval:     5 * time.Second,
		ClaimRetention: 20 * time.Second,
	})
	if err != nil {
		return err
	}
	name := orDefault(os.Getenv("VOLTRO_SCHEDPROC_SCHEDULE"), "soak")
	if err := s.Register(Schedule{Name: name, Spec: "* * * * * *", Overlap: OverlapParallel, Func: noop}); err != nil {
		return err
	}
	return s.Run(ctx)
}
