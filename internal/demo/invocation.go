package demo

// How the user can run the CLI from where they are, so the welcome's hints
// work when pasted: `go run ./cmd/voltro …` when the demo itself was started
// with `go run`, the path they typed for a built binary, `voltro` when it
// is on PATH.

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
)

// Invocation is what PrintWelcome needs to know about how this process was
// started. Every field is optional; CurrentInvocation fills them in.
type Invocation struct {
	Arg0       string // os.Args[0]: what the user typed
	Executable string // os.Executable(): the file that runs
	Dir        string // the working directory
	Package    string // import path of the main package (debug.BuildInfo.Path)
	Module     string // the main module's path (BuildInfo.Main.Path)
	Version    string // the main module's version; "(devel)" for a local build
	// LookPath finds a command on PATH (exec.LookPath); nil: nothing is.
	LookPath func(string) (string, error)
	// ModuleOf names the module whose go.mod is in dir ("" if none);
	// nil reads dir/go.mod.
	ModuleOf func(dir string) string
}

// CurrentInvocation describes this process.
func CurrentInvocation() Invocation {
	in := Invocation{LookPath: exec.LookPath}
	if len(os.Args) > 0 {
		in.Arg0 = os.Args[0]
	}
	in.Executable, _ = os.Executable()
	in.Dir, _ = os.Getwd()
	if bi, ok := debug.ReadBuildInfo(); ok {
		in.Package, in.Module, in.Version = bi.Path, bi.Main.Path, bi.Main.Version
	}
	return in
}

// Command is the command line that runs this CLI from in.Dir: `go run
// <package>` when the executable is a `go run` build (it lives in a go-build
// directory: the temporary work directory or the build cache), otherwise the
// name the user typed, shortened to its base name when PATH finds the same
// file under it. "voltro" when nothing is known.
func (in Invocation) Command() string {
	if goRunBuild(in.Executable) {
		return "go run " + in.goRunTarget()
	}
	if in.Arg0 == "" {
		return "voltro"
	}
	if !strings.ContainsRune(in.Arg0, os.PathSeparator) && !strings.ContainsRune(in.Arg0, '/') {
		return in.Arg0 // found on PATH
	}
	base := filepath.Base(in.Arg0)
	if in.LookPath != nil && in.Executable != "" {
		if p, err := in.LookPath(base); err == nil && sameFile(p, in.Executable) {
			return base
		}
	}
	return in.Arg0
}

// goRunBuild reports whether exe was built by `go run`: a path component
// named go-build… (GOTMPDIR/go-build123/b001/exe/voltro, or the build cache
// $GOCACHE, …/go-build/…, where newer toolchains keep such executables).
func goRunBuild(exe string) bool {
	for _, part := range strings.Split(filepath.ToSlash(exe), "/") {
		if strings.HasPrefix(part, "go-build") {
			return true
		}
	}
	return false
}

// goRunTarget is the package argument of `go run` that builds this CLI from
// in.Dir: a relative path inside a checkout of its module (./cmd/voltro from
// the module root), else the import path (@version when it was a released
// version, as `go run pkg@version` builds).
func (in Invocation) goRunTarget() string {
	pkg := in.Package
	if pkg == "" {
		pkg = "github.com/voltro/voltro/cmd/voltro"
	}
	if in.Module != "" && in.Dir != "" && (pkg == in.Module || strings.HasPrefix(pkg, in.Module+"/")) {
		moduleOf := in.ModuleOf
		if moduleOf == nil {
			moduleOf = readModule
		}
		// the nearest go.mod decides: inside a checkout of the module, a
		// relative path; inside another module, the import path
		for dir := in.Dir; ; dir = filepath.Dir(dir) {
			if m := moduleOf(dir); m != "" {
				if m != in.Module {
					break
				}
				rel, err := filepath.Rel(in.Dir, filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(pkg, in.Module))))
				if err != nil {
					break
				}
				rel = filepath.ToSlash(rel)
				if rel != "." && !strings.HasPrefix(rel, "../") {
					rel = "./" + rel
				}
				return rel
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	if in.Version != "" && in.Version != "(devel)" {
		return pkg + "@" + in.Version
	}
	return pkg
}

// readModule is the module path declared by dir/go.mod, "" without one.
func readModule(dir string) string {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module"); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false
	}
	return os.SameFile(fa, fb)
}
