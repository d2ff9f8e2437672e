package workflow

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

type schemaInner struct {
	Name string   `json:"name"`
	Tags []string `json:"tags,omitempty"`
}

type schemaBase struct {
	ID    int64  `json:"id"`
	Shade string `json:"shade"`
}

type schemaCustom struct{ v string }

func (c *schemaCustom) UnmarshalJSON(b []byte) error { c.v = string(b); return nil }

type schemaLevel int

func (l *schemaLevel) UnmarshalText(b []byte) error { *l = schemaLevel(len(b)); return nil }

type schemaNode struct {
	Value    int          `json:"value"`
	Children []schemaNode `json:"children"`
}

type schemaInput struct {
	schemaBase
	Count    int                `json:"count"`
	Small    uint8              `json:"small,omitempty"`
	Ratio    float32            `json:"ratio"`
	OK       bool               `json:"ok"`
	When     time.Time          `json:"when"`
	Blob     []byte             `json:"blob"`
	Maybe    *int               `json:"maybe"`
	Inner    schemaInner        `json:"inner"`
	List     []schemaInner      `json:"list"`
	Fixed    [2]int             `json:"fixed"`
	ByName   map[string]float64 `json:"byName"`
	ByNum    map[int]string     `json:"byNum"`
	Any      any                `json:"any"`
	Raw      json.RawMessage    `json:"raw"`
	Custom   schemaCustom       `json:"custom"`
	Level    schemaLevel        `json:"level"`
	Quoted   int                `json:"quoted,string"`
	Node     schemaNode         `json:"node"`
	Skipped  chan int           `json:"-"`
	Untagged string
	hidden   int //lint:ignore U1000 an unexported field the schema must skip
}

func TestInputSchemaDerivation(t *testing.T) {
	got := string(InputSchema(reflect.TypeFor[schemaInput]()))
	for _, want := range []string{
		`"id":{"type":"integer","format":"int64"}`, // promoted from the embedded struct
		`"count":{"type":"integer","format":"int64"}`,
		`"small":{"type":"integer","format":"uint8"}`,
		`"ratio":{"type":"number","format":"float"}`,
		`"ok":{"type":"boolean"}`,
		`"when":{"type":"string","format":"date-time"}`,
		`"blob":{"type":["string","array","null"],"contentEncoding":"base64","items":{"type":"integer","format":"uint8"}}`,
		`"maybe":{"type":["integer","null"],"format":"int64"}`,
		`"inner":{"type":"object","properties":{"name":{"type":"string"},"tags":{"type":["array","null"],"items":{"type":"string"}}}}`,
		`"fixed":{"type":"array","items":{"type":"integer","format":"int64"}}`,
		`"byName":{"type":["object","null"],"additionalProperties":{"type":"number","format":"double"}}`,
		`"byNum":{"type":["object","null"],"additionalProperties":{"type":"string"}}`,
		`"any":{}`, `"raw":{}`, `"custom":{}`,
		`"level":{"type":"string"}`,
		`"quoted":{"type":"string"}`,
		`"node":{"type":"object","properties":{"children":{"type":["array","null"],"items":{}},"value"`,
		`"Untagged":{"type":"string"}`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("schema lacks %s\n%s", want, got)
		}
	}
	for _, absent := range []string{"Skipped", "hidden", "schemaBase", "required", "additionalProperties\":false"} {
		if strings.Contains(got, absent) {
			t.Errorf("schema must not mention %s\n%s", absent, got)
		}
	}
	// Types that accept anything publish nothing.
	for _, typ := range []reflect.Type{reflect.TypeFor[any](), reflect.TypeFor[json.RawMessage](), reflect.TypeFor[*schemaCustom](), reflect.TypeFor[chan int]()} {
		if s := InputSchema(typ); s != nil {
			t.Errorf("%v: want no schema, got %s", typ, s)
		}
	}
	if s := string(InputSchema(reflect.TypeFor[*string]())); s != `{"type":["string","null"]}` {
		t.Errorf("*string: %s", s)
	}
}

func TestInputSchemaConflicts(t *testing.T) {
	type A struct{ X, Y int }
	type B struct {
		X int
		Y int `json:"Y"`
	}
	type C struct {
		A
		B
		X string // shallower wins
	}
	got := string(InputSchema(reflect.TypeFor[C]()))
	want := `{"type":"object","properties":{"X":{"type":"string"},"Y":{"type":"integer","format":"int64"}}}`
	if got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}

// CheckInput must agree with json.Unmarshal: no problem exactly when
// decoding succeeds.
func TestCheckInputAgreesWithDecoding(t *testing.T) {
	schema := InputSchema(reflect.TypeFor[schemaInput]())
	for _, tc := range []struct {
		input string
		want  string // a substring of the first problem, "" for none
	}{
		{`null`, ""},
		{`{}`, ""},
		{`{"count": 3, "small": 255, "ratio": 1.5, "ok": true, "when": "2026-01-02T03:04:05Z", "blob": "aGk=", "maybe": null}`, ""},
		{`{"unknown": [1, {"x": 2}], "COUNT": 4, "untagged": "x"}`, ""},
		{`{"count": null, "inner": null, "list": null, "when": null}`, ""},
		{`{"blob": [1, 2, 255]}`, ""},
		{`{"inner": {"name": "n", "tags": ["a"]}, "list": [{"name": "m"}], "fixed": [1, 2, 3]}`, ""},
		{`{"byName": {"a": 1, "b": 2.5}, "byNum": {"1": "x"}}`, ""},
		{`{"any": {"x": [1]}, "raw": [true], "custom": 12, "level": "high", "quoted": "12"}`, ""},
		{`{"node": {"value": 1, "children": [{"value": 2, "children": [{"value": "deep"}]}]}}`, "lenient"}, // recursion is not followed
		{`{"id": 7, "shade": "blue"}`, ""},
		{`[]`, `input: expected object, got array`},
		{`"x"`, `input: expected object, got string "x"`},
		{`{"count": "3"}`, `input.count: expected integer (int64), got string "3"`},
		{`{"count": 1.5}`, `input.count: expected integer (int64), got number 1.5: an integer takes no fraction or exponent`},
		{`{"count": 1e3}`, `no fraction or exponent`},
		{`{"Count": true}`, `input.Count: expected integer (int64), got boolean true`},
		{`{"small": 256}`, `input.small: expected integer (uint8), got number 256: out of range`},
		{`{"small": -1}`, `negative`},
		{`{"ratio": 1e39}`, `input.ratio: expected number (float), got number 1e39: out of range`},
		{`{"ratio": "1"}`, `input.ratio: expected number (float)`},
		{`{"ok": 1}`, `input.ok: expected boolean, got number 1`},
		{`{"when": "yesterday"}`, `input.when: expected string (date-time), got string "yesterday": not an RFC 3339 time`},
		{`{"when": 5}`, `input.when: expected string (date-time), got number 5`},
		{`{"blob": "not base64!"}`, `input.blob: expected string or array (base64)`},
		{`{"blob": [256]}`, `input.blob[0]: expected integer (uint8)`},
		{`{"maybe": "1"}`, `input.maybe: expected integer (int64), got string`},
		{`{"inner": {"name": 5}}`, `input.inner.name: expected string, got number 5`},
		{`{"inner": []}`, `input.inner: expected object, got array`},
		{`{"list": [{"name": "a"}, {"tags": [1]}]}`, `input.list[1].tags[0]: expected string, got number 1`},
		{`{"fixed": {}}`, `input.fixed: expected array, got object`},
		{`{"byName": {"a b": "x"}}`, `input.byName["a b"]: expected number (double), got string "x"`},
		{`{"byName": []}`, `input.byName: expected object, got array`},
		{`{"level": 3}`, `input.level: expected string, got number 3`},
		{`{"quoted": 12}`, `input.quoted: expected string, got number 12`},
		{`{"id": "seven"}`, `input.id: expected integer (int64)`},
	} {
		// "lenient": decoding fails where the schema does not look
		lenient := tc.want == "lenient"
		if lenient {
			tc.want = ""
		}
		problems, err := CheckInput(schema, []byte(tc.input))
		if err != nil {
			t.Fatal(err)
		}
		var v schemaInput
		decodeErr := json.Unmarshal([]byte(tc.input), &v)
		switch {
		case tc.want == "" && len(problems) > 0:
			t.Errorf("%s: want no problem, got %q", tc.input, problems)
		case tc.want != "" && (len(problems) == 0 || !strings.Contains(problems[0], tc.want)):
			t.Errorf("%s: want %q, got %q", tc.input, tc.want, problems)
		}
		if (decodeErr == nil) != (len(problems) == 0) && !lenient {
			t.Errorf("%s: json.Unmarshal says %v, CheckInput says %q", tc.input, decodeErr, problems)
		}
	}
}

func TestCheckInputReportsSeveral(t *testing.T) {
	type In struct {
		A, B, C, D, E, F, G int
	}
	problems, err := CheckInput(InputSchema(reflect.TypeFor[In]()), []byte(`{"A":"","B":"","C":"","D":"","E":"","F":"","G":""}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != maxProblems+1 || problems[0] != `input.A: expected integer (int64), got string ""` || problems[maxProblems] != "and 2 more" {
		t.Fatalf("%q", problems)
	}
	if p, _ := CheckInput(InputSchema(reflect.TypeFor[In]()), []byte(`{"A":`)); len(p) != 1 || !strings.HasPrefix(p[0], "input: not valid JSON") {
		t.Fatalf("malformed input: %q", p)
	}
	if _, err := CheckInput([]byte(`{"type":`), []byte(`{}`)); err == nil {
		t.Fatal("an unreadable schema must be an error")
	}
	// A schema from a newer version with a type this one does not know
	// refuses nothing on its account.
	if p, _ := CheckInput([]byte(`{"type":["string","decimal"]}`), []byte(`5`)); len(p) != 0 {
		t.Fatalf("unknown type: %q", p)
	}
}

func TestInputSchemaSizeLimit(t *testing.T) {
	fields := make([]reflect.StructField, 200)
	for i := range fields {
		fields[i] = reflect.StructField{Name: "FieldWithALongName" + strings.Repeat("X", 3) + string(rune('A'+i%26)) + string(rune('A'+i/26)), Type: reflect.TypeFor[int]()}
	}
	if s := InputSchema(reflect.StructOf(fields)); s != nil {
		t.Fatalf("a %d-byte schema must not be published", len(s))
	}
}

func TestHostingCheckInput(t *testing.T) {
	type V1 struct {
		N int `json:"n"`
	}
	type V2 struct {
		N string `json:"n"`
	}
	v1 := PublishedSchema{Runner: "10.0.0.1:34000", Schema: InputSchema(reflect.TypeFor[V1]())}
	v2 := PublishedSchema{Runner: "10.0.0.2:34000", Schema: InputSchema(reflect.TypeFor[V2]())}
	if err := (Hosting{}).CheckInput("w", []byte(`{"n":true}`)); err != nil {
		t.Fatalf("no schema published: %v", err)
	}
	err := Hosting{Inputs: []PublishedSchema{v1}}.CheckInput("w", []byte(`{"n":"x"}`))
	if err == nil || !strings.Contains(err.Error(), `input.n: expected integer (int64), got string "x"`) ||
		!strings.Contains(err.Error(), `workflow "w"`) || !strings.Contains(err.Error(), "10.0.0.1:34000") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("refusal: %v", err)
	}
	// Mid-deploy, input that fits either runner's type passes.
	both := Hosting{Inputs: []PublishedSchema{v1, v2}}
	if err := both.CheckInput("w", []byte(`{"n":"x"}`)); err != nil {
		t.Fatal(err)
	}
	if err := both.CheckInput("w", []byte(`{"n":true}`)); err == nil {
		t.Fatal("input neither type decodes must be refused")
	}
}
