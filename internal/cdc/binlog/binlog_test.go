// Unit tests of server_id derivation and replication grant parsing.
package binlog

import (
	"slices"
	"testing"
)

func TestServerID(t *testing.T) {
	a, b := ServerID("pod-0", 1), ServerID("pod-1", 1)
	if a == b || a == 0 || a == 1 || b == 0 {
		t.Fatalf("ids %d, %d", a, b)
	}
	if ServerID("pod-0", 1) != a {
		t.Fatal("not stable")
	}
	// a source whose own id equals the hash gets a different, still stable id
	clash := ServerID("pod-0", a)
	if clash == a || clash == 0 || clash != ServerID("pod-0", a) {
		t.Fatalf("clash handling: %d", clash)
	}
}

func TestMissingGrants(t *testing.T) {
	cases := []struct {
		grants []string
		want   []string
	}{
		{[]string{"GRANT ALL PRIVILEGES ON *.* TO `ROOT`@`%`"}, nil},
		{[]string{"GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO `R`@`%`"}, nil},
		{[]string{"GRANT REPLICATION CLIENT ON *.* TO `R`@`%`", "GRANT ALL PRIVILEGES ON `APP`.* TO `R`@`%`"}, []string{"REPLICATION SLAVE"}},
		{[]string{"GRANT USAGE ON *.* TO `R`@`%`"}, []string{"REPLICATION SLAVE", "REPLICATION CLIENT"}},
	}
	for i, c := range cases {
		if got := missingGrants(c.grants); !slices.Equal(got, c.want) {
			t.Errorf("case %d: %v, want %v", i, got, c.want)
		}
	}
}
