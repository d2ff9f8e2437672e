package demo

// The welcome's hints run the CLI the way this demo was run: `go run
// ./cmd/voltro …` from a checkout when the demo is a `go run` build, the
// typed path of a built binary, its name when PATH finds it.
// go test ./internal/demo -run Welcome -update rewrites the golden file.

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/voltro/voltro/internal/golden"
)

// a checkout of the module at /src/voltro
func checkout(dir string) string {
	switch dir {
	case "/src/voltro":
		return "github.com/voltro/voltro"
	case "/src/app":
		return "example.com/app"
	}
	return ""
}

func notOnPath(string) (string, error) { return "", errors.New("not found") }

func TestWelcomeHintsFromGoRun(t *testing.T) {
	in := Invocation{
		Arg0: "/tmp/go-build1234/b001/exe/voltro", Executable: "/tmp/go-build1234/b001/exe/voltro",
		Dir: "/src/voltro", Package: "github.com/voltro/voltro/cmd/voltro", Module: "github.com/voltro/voltro", Version: "(devel)",
		LookPath: notOnPath, ModuleOf: checkout,
	}
	var b bytes.Buffer
	PrintWelcome(&b, in.Command(), "sqlite:voltro-demo.db", "127.0.0.1:41234")
	golden.Check(t, "welcome_gorun.golden", b.Bytes())
}

func TestInvocationCommand(t *testing.T) {
	self := filepath.Join(t.TempDir(), "voltro") // a built binary (the test's own lives in go-build)
	if err := os.WriteFile(self, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	onPath := func(name string) (string, error) { return self, nil }
	gorun := Invocation{Executable: "/tmp/go-build99/b001/exe/voltro", Package: "github.com/voltro/voltro/cmd/voltro",
		Module: "github.com/voltro/voltro", Version: "(devel)", LookPath: notOnPath, ModuleOf: checkout}
	at := func(in Invocation, dir string) Invocation { in.Dir = dir; return in }
	cached := gorun
	cached.Executable = "/root/.cache/go-build/ab/abcdef-d/voltro" // newer toolchains cache go run builds
	released := gorun
	released.Version, released.Dir = "v0.4.0", "/home/u"
	dependency := gorun
	dependency.Module, dependency.Dir = "example.com/app", "/src/app"
	for _, c := range []struct {
		name string
		in   Invocation
		want string
	}{
		{"go run at the module root", at(gorun, "/src/voltro"), "go run ./cmd/voltro"},
		{"go run in a subdirectory", at(gorun, "/src/voltro/docs"), "go run ../cmd/voltro"},
		{"go run in the package directory", at(gorun, "/src/voltro/cmd/voltro"), "go run ."},
		{"go run from the build cache", at(cached, "/src/voltro"), "go run ./cmd/voltro"},
		{"go run outside a checkout", at(gorun, "/home/u"), "go run github.com/voltro/voltro/cmd/voltro"},
		{"go run inside another module", at(gorun, "/src/app"), "go run github.com/voltro/voltro/cmd/voltro"},
		{"go run pkg@version", released, "go run github.com/voltro/voltro/cmd/voltro@v0.4.0"},
		{"go run of a dependency", dependency, "go run github.com/voltro/voltro/cmd/voltro"},
		{"a binary found on PATH", Invocation{Arg0: "voltro", Executable: "/usr/local/bin/voltro"}, "voltro"},
		{"a binary run by its path", Invocation{Arg0: "bin/voltro", Executable: "/src/voltro/bin/voltro", LookPath: notOnPath}, "bin/voltro"},
		{"a binary run by its path that PATH finds too", Invocation{Arg0: "./voltro", Executable: self, LookPath: onPath}, "voltro"},
		{"nothing known", Invocation{}, "voltro"},
	} {
		if got := c.in.Command(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
