package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// modulePath is the module's import path.
const modulePath = "github.com/voltro/voltro"

// publicPackages are the directories of the importable library packages:
// everything outside internal/, cmd/, examples/ and deploy/ that is not a
// command.
func publicPackages(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	for dir, files := range sourceDirs(t) {
		first := strings.Split(dir, string(filepath.Separator))[0]
		if first == "internal" || first == "cmd" || first == "examples" || first == "deploy" {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(moduleRoot, dir, files[0]), nil, parser.PackageClauseOnly)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name != "main" {
			out[dir] = files
		}
	}
	return out
}

// importPath is dir's import path.
func importPath(dir string) string {
	if dir == "." {
		return modulePath
	}
	return modulePath + "/" + filepath.ToSlash(dir)
}

// receiverName is the name of a method's receiver type (generic or not).
func receiverName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return receiverName(x.X)
	case *ast.IndexExpr:
		return receiverName(x.X)
	case *ast.IndexListExpr:
		return receiverName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return ""
}

// exportedFuncs lists the exported functions ("F") and the exported methods
// of exported types ("T.M") of the package in dir.
func exportedFuncs(t *testing.T, dir string, files []string) []string {
	t.Helper()
	fset := token.NewFileSet()
	var out []string
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(moduleRoot, dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || !fd.Name.IsExported() {
				continue
			}
			if fd.Recv == nil {
				out = append(out, fd.Name.Name)
				continue
			}
			if r := receiverName(fd.Recv.List[0].Type); ast.IsExported(r) {
				out = append(out, r+"."+fd.Name.Name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// testUses is what the module's tests (and Examples) name of one package:
// its functions by name, and the method names they select on anything,
// in test files of the package's own directory or importing it.
type testUses struct {
	funcs, methods map[string]bool
}

func moduleTestUses(t *testing.T, public map[string][]string) map[string]*testUses {
	t.Helper()
	uses := map[string]*testUses{}
	byPath := map[string]string{}
	for dir := range public {
		uses[dir] = &testUses{funcs: map[string]bool{}, methods: map[string]bool{}}
		byPath[importPath(dir)] = dir
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(moduleRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != moduleRoot && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(moduleRoot, filepath.Dir(path))
		if err != nil {
			return err
		}
		// The packages this file reaches, and the local names of those
		// it imports.
		local := map[string]string{} // local name -> public dir
		var reached []string
		if _, ok := public[rel]; ok {
			reached = append(reached, rel)
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			dir, ok := byPath[p]
			if !ok {
				continue
			}
			name := filepath.Base(p)
			if dir == "." {
				name = "voltro"
			}
			if im.Name != nil {
				name = im.Name.Name
			}
			local[name] = dir
			reached = append(reached, dir)
		}
		if len(reached) == 0 {
			return nil
		}
		declared := map[*ast.Ident]bool{}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				declared[fd.Name] = true
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok {
					if dir, ok := local[id.Name]; ok {
						uses[dir].funcs[x.Sel.Name] = true
					}
				}
				for _, dir := range reached {
					uses[dir].methods[x.Sel.Name] = true
				}
			case *ast.Ident:
				if !declared[x] {
					if _, ok := public[rel]; ok {
						uses[rel].funcs[x.Name] = true
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return uses
}

// Every exported function and method of the public packages is called by
// some test or Example, so each has run at least once before a release.
// Methods are matched by name among the selectors of the test files that
// reach their package (in its directory, or importing it).
func TestExportedFunctionsAreReached(t *testing.T) {
	public := publicPackages(t)
	uses := moduleTestUses(t, public)
	total := 0
	var unreached []string
	dirs := make([]string, 0, len(public))
	for dir := range public {
		dirs = append(dirs, dir)
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		u := uses[dir]
		for _, fn := range exportedFuncs(t, dir, public[dir]) {
			total++
			typ, method, isMethod := strings.Cut(fn, ".")
			if isMethod && u.methods[method] || !isMethod && u.funcs[typ] {
				continue
			}
			unreached = append(unreached, importPath(dir)+"."+fn)
		}
	}
	t.Logf("%d of %d exported functions and methods reached by no test or Example", len(unreached), total)
	for _, fn := range unreached {
		t.Errorf("%s is reached by no test or Example", fn)
	}
}
