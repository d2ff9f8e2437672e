package workflow

// The input schema of a typed workflow: a small JSON Schema (a subset of
// draft 2020-12) derived from its Go input type at registration, published
// in the runner row, so a start by name (the CLI) can refuse input the
// workflow could not decode before queueing it. The check is encoding/json's
// own: it flags what json.Unmarshal into the type would fail on (a wrong
// JSON type, a number that does not fit, a bad time or base64 string) and
// nothing else: unknown fields are ignored, names match case-insensitively,
// and null is accepted anywhere (it leaves a non-pointer at its zero value).

import (
	"bytes"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxInputSchema is the largest schema published (bytes of JSON): a type
// whose schema is larger publishes none, and its starts are not checked.
const MaxInputSchema = 4096

// Schema is the subset of JSON Schema InputSchema generates and CheckInput
// reads. A Schema with no Type accepts anything.
type Schema struct {
	Type            typeList           `json:"type,omitempty"`
	Format          string             `json:"format,omitempty"` // date-time; intN, uintN, float, double
	ContentEncoding string             `json:"contentEncoding,omitempty"`
	Properties      map[string]*Schema `json:"properties,omitempty"`
	Additional      *Schema            `json:"additionalProperties,omitempty"`
	Items           *Schema            `json:"items,omitempty"`
}

// typeList is the "type" keyword: one name, or a list of names.
type typeList []string

func (t typeList) MarshalJSON() ([]byte, error) {
	if len(t) == 1 {
		return json.Marshal(t[0])
	}
	return json.Marshal([]string(t))
}

func (t *typeList) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*t = typeList{one}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(t))
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	timeType        = reflect.TypeFor[time.Time]()
)

// InputSchema derives the JSON Schema of what json.Unmarshal accepts into
// a value of type t, or nil when it would accept anything (an interface,
// json.RawMessage, another json.Unmarshaler) or the schema is larger than
// MaxInputSchema.
func InputSchema(t reflect.Type) json.RawMessage {
	if t == nil {
		return nil
	}
	d := deriver{busy: map[reflect.Type]bool{}}
	s := d.of(t)
	if len(s.Type) == 0 {
		return nil
	}
	b, err := json.Marshal(s)
	if err != nil || len(b) > MaxInputSchema {
		return nil
	}
	return b
}

type deriver struct {
	busy map[reflect.Type]bool // structs being derived: a recursive use accepts anything
}

func implements(t, iface reflect.Type) bool {
	return t.Implements(iface) || (t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(iface))
}

func typed(names ...string) *Schema { return &Schema{Type: names} }

// nullable adds null to a schema's types (what a nil marshals to).
func nullable(s *Schema) *Schema {
	if len(s.Type) > 0 && !slices.Contains(s.Type, "null") {
		s.Type = append(s.Type, "null")
	}
	return s
}

func (d *deriver) of(t reflect.Type) *Schema {
	if t.Kind() == reflect.Pointer {
		return nullable(d.of(t.Elem()))
	}
	switch {
	case t == timeType:
		return &Schema{Type: typeList{"string"}, Format: "date-time"}
	case implements(t, jsonUnmarshaler):
		return &Schema{}
	case implements(t, textUnmarshaler):
		return typed("string")
	}
	switch t.Kind() {
	case reflect.Bool:
		return typed("boolean")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return &Schema{Type: typeList{"integer"}, Format: fmt.Sprintf("int%d", t.Bits())}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return &Schema{Type: typeList{"integer"}, Format: fmt.Sprintf("uint%d", t.Bits())}
	case reflect.Float32:
		return &Schema{Type: typeList{"number"}, Format: "float"}
	case reflect.Float64:
		return &Schema{Type: typeList{"number"}, Format: "double"}
	case reflect.String:
		return typed("string")
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			// base64 text, as Marshal writes it; Unmarshal takes an array too
			return &Schema{Type: typeList{"string", "array", "null"}, ContentEncoding: "base64", Items: d.of(t.Elem())}
		}
		return &Schema{Type: typeList{"array", "null"}, Items: d.of(t.Elem())}
	case reflect.Array:
		return &Schema{Type: typeList{"array"}, Items: d.of(t.Elem())}
	case reflect.Map:
		k := t.Key()
		switch {
		case k.Kind() == reflect.String, implements(k, textUnmarshaler):
		case k.Kind() >= reflect.Int && k.Kind() <= reflect.Uintptr:
			// integer keys: the keys themselves are not checked
		default:
			return &Schema{} // json cannot decode it; not ours to judge
		}
		return &Schema{Type: typeList{"object", "null"}, Additional: d.of(t.Elem())}
	case reflect.Struct:
		if d.busy[t] {
			return &Schema{}
		}
		d.busy[t] = true
		defer delete(d.busy, t)
		s := &Schema{Type: typeList{"object"}, Properties: map[string]*Schema{}}
		for _, f := range structFields(t) {
			if f.quoted {
				s.Properties[f.name] = typed("string")
			} else {
				s.Properties[f.name] = d.of(f.typ)
			}
		}
		return s
	}
	return &Schema{} // interfaces accept anything; chan, func, complex cannot be decoded at all
}

type field struct {
	name   string
	tagged bool
	depth  int
	typ    reflect.Type
	quoted bool // the ",string" option
}

// structFields lists the JSON members of struct t as encoding/json sees
// them: json tags (name, "-", ",string"), exported fields, untagged
// embedded structs promoted, and of a name at several depths the
// shallowest (a tie broken by a tag, else the name dropped).
func structFields(t reflect.Type) []field {
	var all []field
	level := []reflect.Type{t}
	visited := map[reflect.Type]bool{}
	for depth := 0; len(level) > 0; depth++ {
		var next []reflect.Type
		for _, st := range level {
			if visited[st] {
				continue
			}
			visited[st] = true
			for i := range st.NumField() {
				sf := st.Field(i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if sf.Anonymous {
					if !sf.IsExported() && ft.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
					next = append(next, ft)
					continue
				}
				f := field{name: name, tagged: name != "", depth: depth, typ: sf.Type}
				if f.name == "" {
					f.name = sf.Name
				}
				if slices.Contains(strings.Split(opts, ","), "string") {
					switch ft.Kind() {
					case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
						reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
						reflect.Float32, reflect.Float64, reflect.String:
						f.quoted = true
					}
				}
				all = append(all, f)
			}
		}
		level = next
	}
	byName := map[string][]field{}
	for _, f := range all {
		byName[f.name] = append(byName[f.name], f)
	}
	var out []field
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		fs := byName[name]
		slices.SortStableFunc(fs, func(a, b field) int {
			if a.depth != b.depth {
				return a.depth - b.depth
			}
			return boolRank(b.tagged) - boolRank(a.tagged) // tagged first
		})
		if len(fs) > 1 && fs[0].depth == fs[1].depth && fs[0].tagged == fs[1].tagged {
			continue // ambiguous: encoding/json ignores it
		}
		out = append(out, fs[0])
	}
	return out
}

// maxProblems is how many mismatches CheckInput reports.
const maxProblems = 5

// CheckInput reports, in input order, where input (JSON) does not fit
// schema (an InputSchema) the way json.Unmarshal would fail on it: each
// problem names a path (input.items[2].name) and what was expected. An
// empty result means decoding would succeed as far as the schema tells.
func CheckInput(schema, input []byte) ([]string, error) {
	var s Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("the published input schema is unreadable: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return []string{"input: not valid JSON: " + err.Error()}, nil
	}
	c := checker{}
	c.check("input", &s, v)
	if n := len(c.problems); n > maxProblems {
		c.problems = append(c.problems[:maxProblems], fmt.Sprintf("and %d more", n-maxProblems))
	}
	return c.problems, nil
}

type checker struct{ problems []string }

func (c *checker) fail(path string, s *Schema, v any, why string) {
	want := strings.Join(slices.DeleteFunc(slices.Clone([]string(s.Type)), func(t string) bool { return t == "null" }), " or ")
	if s.Format != "" {
		want += " (" + s.Format + ")"
	} else if s.ContentEncoding != "" {
		want += " (" + s.ContentEncoding + ")"
	}
	msg := fmt.Sprintf("%s: expected %s, got %s", path, want, describe(v))
	if why != "" {
		msg += ": " + why
	}
	c.problems = append(c.problems, msg)
}

func kindOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	}
	return "null"
}

func describe(v any) string {
	switch x := v.(type) {
	case string:
		q := strconv.Quote(x)
		if len(q) > 40 {
			q = q[:37] + `..."`
		}
		return "string " + q
	case json.Number, bool:
		return fmt.Sprintf("%s %v", kindOf(v), x)
	}
	return kindOf(v)
}

func (c *checker) check(path string, s *Schema, v any) {
	if v == nil || s == nil || len(s.Type) == 0 {
		return // null decodes into anything; no type accepts anything
	}
	k := kindOf(v)
	switch {
	case k == "number" && slices.Contains(s.Type, "number"):
		bits := 64
		if s.Format == "float" {
			bits = 32
		}
		if _, err := strconv.ParseFloat(v.(json.Number).String(), bits); err != nil {
			c.fail(path, s, v, "out of range")
		}
		return
	case k == "number" && slices.Contains(s.Type, "integer"):
		c.checkInteger(path, s, v.(json.Number))
		return
	case !slices.Contains(s.Type, k):
		if slices.ContainsFunc(s.Type, func(t string) bool { return t != "null" && !known(t) }) {
			return // a type this version does not know: not ours to refuse
		}
		c.fail(path, s, v, "")
		return
	}
	switch x := v.(type) {
	case string:
		switch {
		case s.Format == "date-time":
			if _, err := time.Parse(time.RFC3339, x); err != nil {
				c.fail(path, s, v, "not an RFC 3339 time")
			}
		case s.ContentEncoding == "base64":
			if _, err := base64.StdEncoding.DecodeString(x); err != nil {
				c.fail(path, s, v, "not base64")
			}
		}
	case []any:
		for i, e := range x {
			c.check(fmt.Sprintf("%s[%d]", path, i), s.Items, e)
		}
	case map[string]any:
		names := slices.Sorted(maps.Keys(s.Properties))
		for _, key := range slices.Sorted(maps.Keys(x)) {
			p, ok := s.Properties[key]
			if !ok { // encoding/json matches a name case-insensitively
				if i := slices.IndexFunc(names, func(n string) bool { return strings.EqualFold(n, key) }); i >= 0 {
					p, ok = s.Properties[names[i]], true
				}
			}
			if !ok {
				p = s.Additional // nil for a struct: an unknown field is ignored
			}
			c.check(memberPath(path, key), p, x[key])
		}
	}
}

func known(t string) bool {
	switch t {
	case "object", "array", "string", "number", "integer", "boolean", "null":
		return true
	}
	return false
}

func (c *checker) checkInteger(path string, s *Schema, n json.Number) {
	bits, unsigned := 64, false
	if f, ok := strings.CutPrefix(s.Format, "uint"); ok {
		unsigned = true
		bits, _ = strconv.Atoi(f)
	} else if f, ok := strings.CutPrefix(s.Format, "int"); ok {
		bits, _ = strconv.Atoi(f)
	}
	if bits <= 0 || bits > 64 {
		bits = 64
	}
	var err error
	if unsigned {
		_, err = strconv.ParseUint(n.String(), 10, bits)
	} else {
		_, err = strconv.ParseInt(n.String(), 10, bits)
	}
	switch {
	case err == nil:
	case strings.ContainsAny(n.String(), ".eE"):
		c.fail(path, s, n, "an integer takes no fraction or exponent")
	case unsigned && strings.HasPrefix(n.String(), "-"):
		c.fail(path, s, n, "negative")
	case errorsIsRange(err):
		c.fail(path, s, n, "out of range")
	default:
		c.fail(path, s, n, "")
	}
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

func errorsIsRange(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func memberPath(path, key string) string {
	for _, r := range key {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return fmt.Sprintf("%s[%s]", path, strconv.Quote(key))
		}
	}
	if key == "" {
		return path + `[""]`
	}
	return path + "." + key
}
