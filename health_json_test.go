package voltro_test

import (
	"encoding/json"
	"testing"

	"github.com/voltro/voltro"
)

// TestHealthJSON: the readiness verdict encodes with the lower-case names
// the inspect endpoints use, not Go's field names.
func TestHealthJSON(t *testing.T) {
	b, err := json.Marshal(voltro.Health{Problems: []voltro.Problem{{Kind: voltro.ProblemDatabase, Detail: "no answer"}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"ready":false,"problems":[{"kind":"database","detail":"no answer"}]}`; string(b) != want {
		t.Fatalf("Health encodes as %s, want %s", b, want)
	}
}
