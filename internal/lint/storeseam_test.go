package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 25's rule, checked: the store contract is one interface, and what
// only some stores can do comes from Driver.Capabilities. So no code
// outside internal/store (tests included) asserts a value to a type of the
// store package: `x.(store.Something)` means a seam the contract should
// carry instead.
func TestNoStoreAssertionsOutsideTheStore(t *testing.T) {
	fset := token.NewFileSet()
	ifaces := storeInterfaces(t, fset)
	found := 0
	err := filepath.WalkDir(moduleRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(moduleRoot, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if path != moduleRoot && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if rel == "internal/store" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		local := storeImportName(f)
		if local == "" {
			return nil
		}
		found++
		ast.Inspect(f, func(n ast.Node) bool {
			ta, ok := n.(*ast.TypeAssertExpr)
			if !ok || ta.Type == nil {
				return true
			}
			if sel, ok := ta.Type.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == local && ifaces[sel.Sel.Name] {
					t.Errorf("%s:%d: type assertion to store.%s outside internal/store: use the Driver's groups, or a field of Driver.Capabilities",
						rel, fset.Position(ta.Pos()).Line, sel.Sel.Name)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatal("no file outside internal/store imports the store package: the walk found nothing to check")
	}
}

// storeInterfaces names the interface types the store package declares.
func storeInterfaces(t *testing.T, fset *token.FileSet) map[string]bool {
	t.Helper()
	dir := filepath.Join(moduleRoot, "internal/store")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				if ts := spec.(*ast.TypeSpec); ts != nil {
					if _, ok := ts.Type.(*ast.InterfaceType); ok {
						out[ts.Name.Name] = true
					}
				}
			}
		}
	}
	if !out["Driver"] || !out["Locker"] {
		t.Fatalf("the store package's interfaces were not found (have %v)", out)
	}
	return out
}

// storeImportName is the name a file imports internal/store under, "" if
// it does not import it.
func storeImportName(f *ast.File) string {
	for _, imp := range f.Imports {
		if imp.Path.Value != `"github.com/voltro/voltro/internal/store"` {
			continue
		}
		if imp.Name != nil {
			return imp.Name.Name
		}
		return "store"
	}
	return ""
}
