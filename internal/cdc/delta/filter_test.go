// Parsing of COL=VALUE filter terms.
package delta

import "testing"

func TestParseFilter(t *testing.T) {
	f, err := ParseFilter([]string{"status=paid", "note=a=b"})
	if err != nil || f["status"] != "paid" || f["note"] != "a=b" {
		t.Fatalf("%v %v", f, err)
	}
	if f.String() != "note=a=b AND status=paid" {
		t.Fatalf("String %q", f.String())
	}
	for _, bad := range []string{"novalue", "=x"} {
		if _, err := ParseFilter([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
