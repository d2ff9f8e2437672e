package status_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/voltro/voltro/internal/status"
)

// TestIntroNamesEachSource: on a shared database, instances with
// single-process runner storage come from the local registry (they keep no
// runner row); the header says how many came from where instead of
// crediting the runners table with all of them.
func TestIntroNamesEachSource(t *testing.T) {
	src := status.Source{Kind: "runners", Dialect: "postgres", Database: "shop", RegistryDir: "/reg"}
	for _, c := range []struct {
		name    string
		sources []string
		want    string
	}{
		{"runners only", []string{"runners", "runners"}, "2 instance(s) from the runners table of postgres shop"},
		{"none", nil, "0 instance(s) from the runners table of postgres shop"},
		{"registry only", []string{"registry"}, "1 instance(s): 0 from the runners table of postgres shop, 1 from the local registry /reg (single-process runner storage keeps no runner row)"},
		{"both", []string{"runners", "registry"}, "2 instance(s): 1 from the runners table of postgres shop, 1 from the local registry /reg"},
	} {
		r := &status.Report{Source: src, Instances: []status.Instance{}}
		for i, s := range c.sources {
			r.Instances = append(r.Instances, status.Instance{ReplicaID: string(rune('a' + i)), Source: s})
		}
		var b bytes.Buffer
		if err := status.WriteTable(&b, r, false); err != nil {
			t.Fatal(err)
		}
		if first, _, _ := strings.Cut(b.String(), "\n"); !strings.HasPrefix(first, c.want) {
			t.Errorf("%s: header %q, want it to start %q", c.name, first, c.want)
		}
	}
}
