package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// envReaders are the standard library's readers of the process
// environment, by package path.
var envReaders = map[string]map[string]bool{
	"os":      {"Getenv": true, "LookupEnv": true, "Environ": true, "ExpandEnv": true},
	"syscall": {"Getenv": true, "Environ": true},
}

// configHome is the one package that reads the process environment: its
// env.go turns the variables into typed settings (and hands the process
// environment, as a value, to the CLI and the test suite's knobs).
var configHome = filepath.Join("internal", "config")

// varName matches the name of an environment variable.
var varName = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$`)

// readsByName reports a call that reads one variable by its name through a
// function of the environment: env("DB_URL"), cfg.Env(EnvX),
// getenv(someEnv).
func readsByName(call *ast.CallExpr) bool {
	if len(call.Args) != 1 {
		return false
	}
	var fn string
	switch f := call.Fun.(type) {
	case *ast.Ident:
		fn = f.Name
	case *ast.SelectorExpr:
		fn = f.Sel.Name
	}
	if fn != "env" && fn != "Env" && fn != "getenv" && fn != "genv" {
		return false
	}
	switch a := call.Args[0].(type) {
	case *ast.BasicLit:
		v, err := strconv.Unquote(a.Value)
		return err == nil && varName.MatchString(v)
	case *ast.Ident:
		return strings.HasPrefix(a.Name, "Env") || strings.HasSuffix(a.Name, "Env")
	case *ast.SelectorExpr:
		return strings.HasPrefix(a.Sel.Name, "Env") || strings.HasSuffix(a.Sel.Name, "Env")
	}
	return false
}

// Issue 25's rule, checked like the SQL one: no package but internal/config
// reads the environment, neither the process's (os.Getenv and the like)
// nor a variable by name through a function of it. Everything else is
// given its settings, or calls the function of env.go that names the
// variable.
func TestNoEnvironmentReadsOutsideConfig(t *testing.T) {
	fset := token.NewFileSet()
	reads, packages := 0, map[string]bool{}
	for dir, files := range sourceDirs(t) {
		if dir == configHome {
			continue
		}
		for _, name := range files {
			path := filepath.Join(moduleRoot, dir, name)
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			local := map[string]map[string]bool{} // import name -> readers
			for _, im := range f.Imports {
				p, _ := strconv.Unquote(im.Path.Value)
				if r, ok := envReaders[p]; ok {
					n := p
					if im.Name != nil {
						n = im.Name.Name
					}
					local[n] = r
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok && readsByName(call) {
					reads++
					packages[dir] = true
					t.Errorf("%s: reads an environment variable by name: name it in internal/config (env.go) and call that",
						fset.Position(call.Pos()))
					return true
				}
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && local[id.Name][sel.Sel.Name] {
					reads++
					packages[dir] = true
					t.Errorf("%s: %s.%s reads the process environment: read it in internal/config (env.go) and pass the setting, or take a config.Env",
						fset.Position(sel.Pos()), id.Name, sel.Sel.Name)
				}
				return true
			})
		}
	}
	t.Logf("%d reads of the environment in %d packages outside internal/config", reads, len(packages))
}
