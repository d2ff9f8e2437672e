package observe

// The log ring: bounded, Debug kept under an Info handler, attributes and
// groups flattened, and records of several instances merged by time.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestRingIsBounded(t *testing.T) {
	r := NewRing("a", 5, slog.LevelDebug)
	log := slog.New(NewHandler(slog.DiscardHandler, r))
	for i := range 12 {
		log.Info("line", "i", i)
	}
	if r.Len() != 5 || r.Cap() != 5 {
		t.Fatalf("len %d cap %d, want 5 and 5", r.Len(), r.Cap())
	}
	got := r.Tail(0, slog.LevelDebug)
	if len(got) != 5 {
		t.Fatalf("tail kept %d records, want 5", len(got))
	}
	for j, rec := range got {
		if want := int64(7 + j); rec.Attrs["i"] != want {
			t.Fatalf("record %d has i=%v, want %d (oldest evicted first, oldest first out)", j, rec.Attrs["i"], want)
		}
		if rec.Replica != "a" || rec.Seq != uint64(8+j) {
			t.Fatalf("record %d: replica %q seq %d", j, rec.Replica, rec.Seq)
		}
	}
	if last := r.Tail(2, slog.LevelDebug); len(last) != 2 || last[1].Attrs["i"] != int64(11) {
		t.Fatalf("tail 2 = %+v", last)
	}
}

func TestHandlerKeepsDebugPrintsInfo(t *testing.T) {
	var out bytes.Buffer
	inner := slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo})
	r := NewRing("a", 100, slog.LevelDebug)
	log := slog.New(NewHandler(inner, r))
	log.Debug("workflow runner: shard acquired", "shard", "default/7", "epoch", 3)
	log.Info("schedule fired", "schedule", "nightly")
	if strings.Contains(out.String(), "shard acquired") {
		t.Fatalf("the app's Info handler printed a Debug record:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "schedule fired") {
		t.Fatalf("the Info record was not passed on:\n%s", out.String())
	}
	got := r.Tail(0, slog.LevelDebug)
	if len(got) != 2 || got[0].Msg != "workflow runner: shard acquired" || got[0].Level != "DEBUG" {
		t.Fatalf("ring = %+v", got)
	}
	if info := r.Tail(0, slog.LevelInfo); len(info) != 1 || info[0].Msg != "schedule fired" {
		t.Fatalf("level filter: %+v", info)
	}
}

type secret struct{}

func (secret) LogValue() slog.Value { return slog.StringValue("redacted") }

func TestHandlerAttrsAndGroups(t *testing.T) {
	r := NewRing("a", 10, slog.LevelInfo)
	log := slog.New(NewHandler(slog.DiscardHandler, r)).With("replicaId", "a").WithGroup("req").With("id", 7)
	log.Info("done", "err", errors.New("boom"), "took", 1500*time.Millisecond, "pw", secret{},
		slog.Group("db", "rows", 3), "shards", []string{"x", "y"})
	log.Debug("not kept: below the ring's level")
	got := r.Tail(0, slog.LevelDebug)
	if len(got) != 1 {
		t.Fatalf("ring = %+v", got)
	}
	a := got[0].Attrs
	want := map[string]string{"replicaId": "a", "req.id": "7", "req.err": "boom", "req.took": "1.5s", "req.pw": "redacted", "req.db.rows": "3", "req.shards": `["x","y"]`}
	for k, v := range want {
		if fmt.Sprint(a[k]) != v && fmt.Sprintf("%s", a[k]) != v {
			t.Errorf("attr %s = %v (%T), want %s", k, a[k], a[k], v)
		}
	}
}

func TestMergeByTime(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := []Record{{Seq: 1, Time: t0, Msg: "a1", Replica: "a"}, {Seq: 2, Time: t0.Add(2 * time.Second), Msg: "a2", Replica: "a"}}
	b := []Record{{Seq: 1, Time: t0.Add(time.Second), Msg: "b1", Replica: "b"}, {Seq: 2, Time: t0.Add(2 * time.Second), Msg: "b2", Replica: "b"}}
	var msgs []string
	for _, r := range Merge(0, b, a) {
		msgs = append(msgs, r.Msg)
	}
	if got := strings.Join(msgs, " "); got != "a1 b1 a2 b2" {
		t.Fatalf("merged order %q", got)
	}
	if got := Merge(2, a, b); len(got) != 2 || got[0].Msg != "a2" || got[1].Msg != "b2" {
		t.Fatalf("merge tail 2 = %+v", got)
	}
}

func TestRingConcurrentWriters(t *testing.T) {
	r := NewRing("a", 64, slog.LevelDebug)
	log := slog.New(NewHandler(slog.DiscardHandler, r))
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 500 {
				log.InfoContext(context.Background(), "x", "g", g, "i", i)
			}
		}()
	}
	for range 4 {
		<-done
	}
	got := r.Tail(0, slog.LevelDebug)
	if len(got) != 64 || got[63].Seq != 2000 {
		t.Fatalf("kept %d, last seq %d", len(got), got[len(got)-1].Seq)
	}
}

func TestBootRecordsOutliveTheRing(t *testing.T) {
	r := NewRing("a", 4, slog.LevelDebug)
	log := slog.New(NewHandler(slog.DiscardHandler, r))
	log.Info("workflow engine: cluster-sql, dialect=postgres")
	log.Info("workflow runner: address=10.0.0.7:34000 replica=a")
	r.EndBoot()
	for i := range 10 {
		log.Debug("workflow runner: shard acquired", "i", i)
	}
	got := r.TailWithBoot(3, slog.LevelDebug)
	if len(got) != 5 || !got[0].Boot || !got[1].Boot || got[2].Boot || got[4].Attrs["i"] != int64(9) {
		t.Fatalf("boot + tail 3 = %+v", got)
	}
	if plain := r.Tail(3, slog.LevelDebug); len(plain) != 3 || plain[0].Boot {
		t.Fatalf("tail 3 = %+v", plain)
	}
	// merged with another instance, the tail counts only non-boot records
	t0 := got[4].Time
	other := []Record{{Seq: 1, Time: t0.Add(time.Second), Msg: "b", Replica: "b"}}
	merged := Merge(2, got, other)
	if len(merged) != 4 || merged[0].Msg != got[0].Msg || merged[1].Msg != got[1].Msg || merged[2].Attrs["i"] != int64(9) || merged[3].Msg != "b" {
		t.Fatalf("merged = %+v", merged)
	}
	// MergeTail keeps the last n, boot records or not
	if tail := MergeTail(2, r.Tail(2, slog.LevelDebug), other); len(tail) != 2 || tail[0].Attrs["i"] != int64(9) || tail[1].Msg != "b" {
		t.Fatalf("merge tail 2 = %+v", tail)
	}
	if all := MergeTail(2, got, other); len(all) != 2 {
		t.Fatalf("merge tail 2 of boot records and others = %d records", len(all))
	}
}

// The ring holds at most its byte bound: a flood of large records evicts
// the oldest ones by size, not only by count, and a string kept is cut.
func TestRingIsBoundedInBytes(t *testing.T) {
	r := NewRing("a", 2000, slog.LevelDebug)
	r.maxBytes = 512 << 10
	log := slog.New(NewHandler(slog.DiscardHandler, r))
	for i := range 100 {
		log.Info("small", "i", i)
	}
	big := strings.Repeat("x", 64<<10)
	for range 1000 {
		log.Warn("runner rpc: refused a call", "path", big)
	}
	if r.Bytes() > r.maxBytes {
		t.Fatalf("the ring holds %d bytes, over its bound of %d", r.Bytes(), r.maxBytes)
	}
	recs := r.Tail(0, slog.LevelDebug)
	if len(recs) != r.Len() || len(recs) < 25 || len(recs) > 35 {
		t.Fatalf("the ring holds %d records (%d bytes), want the last 25-35 large ones", len(recs), r.Bytes())
	}
	for _, rec := range recs {
		if p, _ := rec.Attrs["path"].(string); len(p) > maxKeptString+len("…") || rec.Seq <= 100 {
			t.Fatalf("record %d kept a path of %d bytes", rec.Seq, len(p))
		}
	}
	if last := recs[len(recs)-1]; last.Seq != 1100 {
		t.Fatalf("newest record %d, want 1100", last.Seq)
	}
	// Small records fill it back up by count.
	for i := range 3000 {
		log.Info("small", "i", i)
	}
	if r.Len() != 2000 {
		t.Fatalf("the ring holds %d small records, want 2000", r.Len())
	}
}
