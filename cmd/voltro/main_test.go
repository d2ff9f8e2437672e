package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Every command in the table is in `voltro help`, in the README, and
// answers --help with exit 0.
func TestCommandTableIsDocumented(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"help"}, func(string) string { return "" }, &out, &errb); code != 0 {
		t.Fatalf("help exited %d", code)
	}
	var names []string
	for n := range commands() {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !strings.Contains(out.String(), "  "+n+" ") {
			t.Errorf("voltro help does not list %q", n)
		}
		if !strings.Contains(string(readme), "voltro "+n) {
			t.Errorf("README does not mention voltro %s", n)
		}
		if n == "version" || n == "demo" {
			continue
		}
		var o, e bytes.Buffer
		if code := run(context.Background(), []string{n, "--help"}, func(string) string { return "" }, &o, &e); code != 0 {
			t.Errorf("voltro %s --help exited %d: %s%s", n, code, o.String(), e.String())
		}
	}
	if code := run(context.Background(), []string{"nope"}, func(string) string { return "" }, &out, &errb); code != 2 {
		t.Errorf("an unknown command must exit 2, got %d", code)
	}
}

// A newcomer reads in the README how to get the `voltro` the demo and the
// docs call.
func TestReadmeSaysHowToGetTheBinary(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"go install ./cmd/voltro", "go build -o bin/voltro ./cmd/voltro"} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("README does not say %q", want)
		}
	}
}
