package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/voltro/voltro/internal/errs"
)

func nested(n int) []byte { return []byte(strings.Repeat("[", n) + strings.Repeat("]", n)) }

// An input nested 9,999 deep used to be accepted and then broke
// `workflows list --format json` for every run.
func TestStartRefusesDeeplyNestedInput(t *testing.T) {
	w := &Engine{}
	for _, in := range [][]byte{nested(9999), nested(MaxPayloadDepth + 1), []byte(`{"a":` + string(nested(MaxPayloadDepth)) + `}`)} {
		_, _, err := w.Start(context.Background(), "pay", in, StartOptions{})
		if !errors.Is(err, errs.ErrInvalidArgument) || !strings.Contains(err.Error(), "deep") {
			t.Errorf("Start with input %d bytes deep: %v, want invalid_argument naming the depth", len(in)/2, err)
		}
		if _, err := w.Signal(context.Background(), "wf_x", "go", in); !errors.Is(err, errs.ErrInvalidArgument) {
			t.Errorf("Signal with a deep payload: %v, want invalid_argument", err)
		}
	}
	for _, in := range [][]byte{nested(MaxPayloadDepth), []byte(`{"s":"` + strings.Repeat("[{", 500) + `\"]"}`), []byte(`null`)} {
		if err := checkPayload("input", in); err != nil {
			t.Errorf("checkPayload(%.40q): %v", in, err)
		}
	}
}

// FuzzPayload: payload checking and decoding against an input schema never
// panic, and a payload that passes decodes and re-encodes, as every reader
// of runs (workflows list --format json) does.
func FuzzPayload(f *testing.F) {
	for _, s := range []string{`null`, `{"amount":10,"to":"x"}`, `[[[[]]]]`, `"\"[[["`, `{"a":[1,{"b":null}]}`, string(nested(65)), `{`, `1e999`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	schema := InputSchema(reflect.TypeFor[struct {
		Amount int               `json:"amount"`
		To     string            `json:"to"`
		Tags   []string          `json:"tags"`
		Meta   map[string]any    `json:"meta"`
		Inner  *struct{ X bool } `json:"inner"`
	}]())
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = CheckInput(schema, b)
		if err := checkPayload("input", b); err != nil {
			if !errors.Is(err, errs.ErrInvalidArgument) {
				t.Fatalf("%v is not invalid_argument", err)
			}
			return
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber() // 1e999 is valid JSON, not a float64
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("accepted %q does not decode: %v", b, err)
		}
		if _, err := json.Marshal(map[string]any{"input": json.RawMessage(b), "decoded": v}); err != nil {
			t.Fatalf("accepted %q does not re-encode: %v", b, err)
		}
	})
}
