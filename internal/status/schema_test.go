package status_test

// The JSON output checked against docs/cluster-status.schema.json with a
// small hand-written validator: required properties, types (with null),
// enums and consts, $ref into $defs, anyOf, array items. It also fails on
// a property the output has but the schema does not declare, so the
// document cannot fall behind the code.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/voltro/voltro/internal/status"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/voltro/voltro/internal/golden"
)

type schema = map[string]any

func loadSchema(t *testing.T) schema {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "cluster-status.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("the schema is not JSON: %v", err)
	}
	return s
}

// checkJSON validates the JSON document b against the root schema.
func checkJSON(t *testing.T, root schema, b []byte) {
	t.Helper()
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, b)
	}
	if errs := validate(root, root, v, "$"); len(errs) > 0 {
		t.Fatalf("output does not match docs/cluster-status.schema.json:\n  %s\n%s", strings.Join(errs, "\n  "), b)
	}
}

func validate(root, s schema, v any, path string) []string {
	if ref, ok := s["$ref"].(string); ok {
		name, found := strings.CutPrefix(ref, "#/$defs/")
		def, _ := root["$defs"].(map[string]any)[name].(map[string]any)
		if !found || def == nil {
			return []string{path + ": unresolvable $ref " + ref}
		}
		if errs := validate(root, def, v, path); len(errs) > 0 {
			return errs
		}
	}
	if alts, ok := s["anyOf"].([]any); ok {
		var all []string
		matched := false
		for _, alt := range alts {
			errs := validate(root, alt.(map[string]any), v, path)
			if len(errs) == 0 {
				matched = true
				break
			}
			all = append(all, errs...)
		}
		if !matched {
			return append([]string{path + ": matches no alternative of anyOf"}, all...)
		}
	}
	if want, ok := s["type"]; ok && !typeOK(want, v) {
		return []string{fmt.Sprintf("%s: %s is not of type %v", path, kind(v), want)}
	}
	if c, ok := s["const"]; ok && fmt.Sprint(c) != fmt.Sprint(v) {
		return []string{fmt.Sprintf("%s: %v is not the const %v", path, v, c)}
	}
	if enum, ok := s["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) }) {
		return []string{fmt.Sprintf("%s: %v is not one of %v", path, v, enum)}
	}
	var errs []string
	switch x := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if _, ok := x[r.(string)]; !ok {
					errs = append(errs, fmt.Sprintf("%s: required property %q missing", path, r))
				}
			}
		}
		if props != nil {
			for k, val := range x {
				ps, ok := props[k].(map[string]any)
				if !ok {
					errs = append(errs, fmt.Sprintf("%s: property %q is not in the schema", path, k))
					continue
				}
				errs = append(errs, validate(root, ps, val, path+"."+k)...)
			}
		}
	case []any:
		if items, ok := s["items"].(map[string]any); ok {
			for i, it := range x {
				errs = append(errs, validate(root, items, it, fmt.Sprintf("%s[%d]", path, i))...)
			}
		}
	}
	return errs
}

func typeOK(want, v any) bool {
	if list, ok := want.([]any); ok {
		return slices.ContainsFunc(list, func(w any) bool { return typeOK(w, v) })
	}
	k := kind(v)
	return k == want || (want == "number" && k == "integer")
}

func kind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func TestJSONMatchesSchema(t *testing.T) {
	root := loadSchema(t)
	var b bytes.Buffer
	if err := status.WriteJSON(&b, fixtureReport()); err != nil {
		t.Fatal(err)
	}
	checkJSON(t, root, b.Bytes())
	golden.Check(t, "report.json.golden", b.Bytes())

	// The smallest report: no instance, no shared state.
	b.Reset()
	empty := &status.Report{SchemaVersion: status.SchemaVersion, Source: status.Source{Kind: "registry"}, Instances: []status.Instance{}}
	if err := status.WriteJSON(&b, empty); err != nil {
		t.Fatal(err)
	}
	checkJSON(t, root, b.Bytes())
}

// The validator itself must catch what it claims to.
func TestSchemaValidatorCatches(t *testing.T) {
	root := loadSchema(t)
	cases := map[string]func(m map[string]any){
		"missing":      func(m map[string]any) { delete(m["instances"].([]any)[0].(map[string]any), "tier") },
		"wrong type":   func(m map[string]any) { m["instances"].([]any)[0].(map[string]any)["ownedShards"] = "150" },
		"not in enum":  func(m map[string]any) { m["instances"].([]any)[0].(map[string]any)["tier"] = "partial" },
		"undeclared":   func(m map[string]any) { m["extra"] = true },
		"null not ok":  func(m map[string]any) { m["shared"].(map[string]any)["messages"] = nil },
		"nested wrong": func(m map[string]any) { m["shared"].(map[string]any)["workflows"] = map[string]any{"running": 1} },
	}
	for name, breakIt := range cases {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			_ = status.WriteJSON(&b, fixtureReport())
			var m map[string]any
			dec := json.NewDecoder(&b)
			dec.UseNumber()
			if err := dec.Decode(&m); err != nil {
				t.Fatal(err)
			}
			breakIt(m)
			if errs := validate(root, root, m, "$"); len(errs) == 0 {
				t.Fatal("the validator accepted a broken document")
			}
		})
	}
}
