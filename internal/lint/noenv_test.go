package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
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

// Issue 25's rule, checked like the SQL one: no package but internal/config
// reads the process environment. Everything else is given its settings, or
// an Env to read through.
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
	t.Logf("%d reads of the process environment in %d packages outside internal/config", reads, len(packages))
}
