package bench

// How --db names the nodes of a cluster.

import (
	"errors"
	"slices"
	"testing"

	"github.com/voltro/voltro/internal/errs"
)

func TestNodeURLs(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"mariadb://a/x", []string{"mariadb://a/x"}},
		{"mariadb://a/x,mariadb://b/x, mariadb://c/x", []string{"mariadb://a/x", "mariadb://b/x", "mariadb://c/x"}},
		{"mariadb://a/x,", []string{"mariadb://a/x"}},
	} {
		got, err := nodeURLs(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("nodeURLs(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	if _, err := nodeURLs(" , "); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Errorf("no URL at all: %v, want invalid argument", err)
	}
}
