package sharding

import (
	"fmt"
	"testing"
)

func TestForIsStableAndSpread(t *testing.T) {
	if a, b := For("default", "order-1", 300), For("default", "order-1", 300); a != b {
		t.Fatal("not stable")
	}
	seen := map[string]int{}
	for i := 0; i < 30000; i++ {
		seen[For("g", fmt.Sprint("e", i), 300)]++
	}
	if len(seen) != 300 {
		t.Fatalf("only %d shards used", len(seen))
	}
	for s, n := range seen {
		if n < 50 || n > 170 {
			t.Fatalf("shard %s got %d of 30000", s, n)
		}
	}
}

// TestForPinned pins real shards: changing the hash (FNV-1a 64 of the entity
// id, modulo the count) would move every entity to another shard. The values
// were computed by For and checked against an independent FNV-1a.
func TestForPinned(t *testing.T) {
	for _, c := range []struct {
		group, id string
		count     int
		want      string
	}{
		{"default", "order-1", 300, "default/225"},
		{"default", "order-2", 300, "default/192"},
		{"default", "", 300, "default/137"},
		{"payments", "user-42", 64, "payments/11"},
		{"g", "e0", 300, "g/232"},
		{"my/group", "x", 1, "my/group/0"},
		{"default", "order-1", 1024, "default/109"},
		{"orders", "ünïcode-ключ", 7, "orders/6"},
	} {
		if got := For(c.group, c.id, c.count); got != c.want {
			t.Errorf("For(%q, %q, %d) = %q, want %q", c.group, c.id, c.count, got, c.want)
		}
	}
}

func TestAssignBoundedAndStable(t *testing.T) {
	shards := All([]string{"default"}, 300)
	runners := []string{"a:1", "b:1", "c:1"}
	a := Assign(shards, runners)
	load := map[string]int{}
	for _, sh := range shards {
		load[a[sh]]++
	}
	for _, r := range runners {
		if load[r] != 100 {
			t.Fatalf("load %v", load)
		}
	}
	// same inputs in another order → same answer
	b := Assign(shards, []string{"c:1", "a:1", "b:1"})
	for _, sh := range shards {
		if a[sh] != b[sh] {
			t.Fatalf("assignment depends on input order at %s", sh)
		}
	}
	// removing a runner moves mostly its own shards
	c := Assign(shards, []string{"a:1", "b:1"})
	moved := 0
	for _, sh := range shards {
		if a[sh] != "c:1" && a[sh] != c[sh] {
			moved++
		}
	}
	if moved > 60 {
		t.Fatalf("%d shards of surviving runners moved", moved)
	}
	if len(Assign(shards, nil)) != 0 {
		t.Fatal("no runners, no owners")
	}
}

func TestParse(t *testing.T) {
	g, i, ok := Parse("my/group/17")
	if !ok || g != "my/group" || i != 17 {
		t.Fatal(g, i, ok)
	}
	if _, _, ok := Parse("nope"); ok {
		t.Fatal("parsed garbage")
	}
}
