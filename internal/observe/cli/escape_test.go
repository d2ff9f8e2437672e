package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/observe"
)

// An unsigned request could put terminal escape codes into `voltro logs`
// through any text a record carries: none reaches the terminal raw.
func TestFormatRecordEscapesControlCharacters(t *testing.T) {
	evil := "\x1b]0;pwned\x07\x1b[2J\rfake\u202eline\x9b"
	r := observe.Record{Time: time.Unix(0, 0), Level: "INFO" + evil, Replica: "api-0" + evil, Msg: "request " + evil,
		Attrs: map[string]any{"path" + evil: "/x" + evil, "n": 3}}
	for _, colour := range []bool{false, true} {
		line := FormatRecord(r, 8, colour)
		plain := strings.NewReplacer("\x1b[31m", "", "\x1b[33m", "", "\x1b[2m", "", "\x1b[0m", "").Replace(line) // our own colours
		if i := strings.IndexFunc(plain, isControl); i >= 0 {
			t.Fatalf("colour %v: control character %q at %d in %q", colour, plain[i:i+1], i, line)
		}
		if !strings.Contains(line, `\x1b]0;pwned\a`) && !strings.Contains(line, `\x1b]0;pwned\x07`) {
			t.Fatalf("the escaped text is not shown: %q", line)
		}
	}
}
