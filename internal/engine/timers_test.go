package engine

// Delayed messages (a workflow's sleeps) through handovers and takeovers:
// none falls due unseen by its owner, to be read only at the next poll.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/mysql"
	"github.com/voltro/voltro/internal/store/postgres"
	"github.com/voltro/voltro/internal/testdb"
	"github.com/voltro/voltro/internal/testwait"
)

// timerPoll is the poll interval of the timer tests: a delayed message
// that its owner's timer missed waits this long.
const timerPoll = 30 * time.Second

func sqlStores(t *testing.T, name string) map[string]func(t *testing.T) store.Driver {
	return map[string]func(t *testing.T) store.Driver{
		"postgres": func(t *testing.T) store.Driver {
			s, err := postgres.Open(context.Background(), testdb.Postgres(t, name), postgres.Options{Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
		"mariadb": func(t *testing.T) store.Driver {
			s, err := mysql.Open(context.Background(), testdb.MariaDB(t, name), mysql.Options{Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
	}
}

// Waves of timers as workflows that a new owner resumed at once set them:
// due together, a few milliseconds apart, on the shards of two runners,
// while runners join and leave (one gracefully, the next by a crash).
// Every timer is delivered within a few seconds of its due time (a
// takeover's wait), not at its owner's next poll.
func TestTimersThroughHandoversAndTakeovers(t *testing.T) {
	for _, name := range []string{"postgres", "mariadb"} {
		t.Run(name, func(t *testing.T) { timersThroughMoves(t, sqlStores(t, "engine_timer_moves")[name](t)) })
	}
}

func timersThroughMoves(t *testing.T, d store.Driver) {
	const (
		waves = 8
		wave  = 60
		late  = 5 * time.Second // a takeover takes well under this
	)
	var mu sync.Mutex
	got := map[string]time.Time{} // by dedupe key
	handler := func(ctx context.Context, m store.Message) ([]byte, error) {
		now := time.Now()
		mu.Lock()
		if _, ok := got[m.DedupeKey]; !ok {
			got[m.DedupeKey] = now
		}
		mu.Unlock()
		return nil, nil
	}
	start := func(name string) *Engine {
		cfg := clusterConfig(t, name)
		cfg.Heartbeat = 300 * time.Millisecond
		cfg.PollInterval = timerPoll
		e, err := New(context.Background(), Options{Config: cfg, Store: d, Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Register("sleeper", handler, EntityOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { crash(e) })
		return e
	}
	a := start("a")
	b := start("b")
	testwait.For(t, 20*time.Second, "a and b settled", settled(a, b))
	ctx := context.Background()
	sendWave := func(w int) {
		at := time.Now().Truncate(100 * time.Millisecond).Add(time.Second)
		for i := 0; i < wave; i++ {
			key := fmt.Sprintf("w%d:%d", w, i)
			if _, err := a.Send(ctx, Message{EntityType: "sleeper", EntityID: fmt.Sprint("s-", i), DedupeKey: key, DeliverAt: at.Add(time.Duration(i) * time.Millisecond)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var joiner *Engine
	for w := 0; w < waves; w++ {
		sendWave(w)
		switch {
		case w%4 == 1:
			joiner = start(fmt.Sprint("j", w))
		case w == 3:
			if err := joiner.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
		case w%4 == 3:
			crash(joiner)
		}
		time.Sleep(1500 * time.Millisecond)
	}
	msgs, err := d.ListMessages(ctx, store.MessageFilter{EntityType: "sleeper"})
	if err != nil {
		t.Fatal(err)
	}
	// Past the last due time by late, whatever is missing is late.
	for deadline := time.Now().Add(late + 2*time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == waves*wave {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var lateness []time.Duration
	var worst string
	over := 0
	for _, m := range msgs {
		l := got[m.DedupeKey].Sub(m.DeliverAt)
		if _, ok := got[m.DedupeKey]; !ok {
			l = time.Since(m.DeliverAt)
		}
		if len(lateness) == 0 || l > slices.Max(lateness) {
			worst = fmt.Sprintf("%s (due %s, %s late)", m.DedupeKey, m.DeliverAt.Format("15:04:05.000"), l.Round(time.Millisecond))
		}
		lateness = append(lateness, l)
		if l > late {
			over++
		}
	}
	slices.Sort(lateness)
	q := func(p float64) time.Duration {
		return lateness[int(p*float64(len(lateness)-1))].Round(time.Millisecond)
	}
	t.Logf("%d timers: lateness p50 %s, p99 %s, max %s: %s", len(lateness), q(0.5), q(0.99), q(1), worst)
	if over > 0 {
		t.Fatalf("%d of %d timers were delivered more than %s late (the poll is %s); the latest: %s", over, len(lateness), late, timerPoll, worst)
	}
}

// slowNextDue is a store whose read of the next due time takes a while to
// start, as on a loaded database.
type slowNextDue struct {
	store.Driver
	delay time.Duration
}

func (s slowNextDue) NextDelivery(ctx context.Context, owner string, types []string) (time.Duration, bool, error) {
	time.Sleep(s.delay)
	return s.Driver.NextDelivery(ctx, owner, types)
}

// Two timers 50 ms apart, on a store that reads the next due time 200 ms
// late: the second falls due while its owner reads when the next one is
// due, after it claimed the first. It is delivered then, not at the poll.
func TestTimerDueWhileTheNextDueTimeIsRead(t *testing.T) {
	for _, name := range []string{"postgres", "mariadb"} {
		t.Run(name, func(t *testing.T) {
			d := slowNextDue{sqlStores(t, "engine_timer_next")[name](t), 200 * time.Millisecond}
			got := make(chan string, 2)
			cfg := clusterConfig(t, "a")
			cfg.PollInterval = timerPoll
			a := startEngine(t, d, cfg)
			if err := a.Register("sleeper", func(ctx context.Context, m store.Message) ([]byte, error) {
				got <- m.EntityID
				return nil, nil
			}, EntityOptions{}); err != nil {
				t.Fatal(err)
			}
			testwait.For(t, 10*time.Second, "a holds every shard", ownsAll(a))
			ctx := context.Background()
			at := time.Now().Add(time.Second)
			for i, id := range []string{"first", "second"} {
				if _, err := a.Send(ctx, Message{EntityType: "sleeper", EntityID: id, DeliverAt: at.Add(time.Duration(i) * 50 * time.Millisecond)}); err != nil {
					t.Fatal(err)
				}
			}
			delivered := map[string]bool{}
			deadline := time.After(time.Until(at) + 5*time.Second)
			for len(delivered) < 2 {
				select {
				case id := <-got:
					delivered[id] = true
				case <-deadline:
					t.Fatalf("delivered %v only, 5 s after both were due (the poll is %s)", delivered, timerPoll)
				}
			}
		})
	}
}
