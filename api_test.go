package voltro

// The public surface names no internal package: go doc shows real types
// with their methods, and a user can spell every type a signature uses.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/voltro/voltro/internal/errs"
)

// publicPackages are the directories of the public packages, each with the
// aliases kept on purpose (none: the root's Error and Code are mirrors of
// the engine's, not aliases).
var publicPackages = map[string]map[string]bool{
	".":          {},
	"changes":    {},
	"voltrotest": {},
}

func TestPublicAPINamesNoInternalPackage(t *testing.T) {
	for dir, aliasesAllowed := range publicPackages {
		for _, b := range internalNames(t, dir, aliasesAllowed) {
			t.Error(b)
		}
	}
}

// internalNames lists where the exported API of the package in dir names an
// internal package or is an alias (other than aliasesAllowed).
func internalNames(t *testing.T, dir string, aliasesAllowed map[string]bool) []string {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no Go files in %s", dir)
	}
	fset := token.NewFileSet()
	var bad []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		internal := map[string]bool{} // local names of imported internal packages
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if !strings.Contains(path, "/internal/") {
				continue
			}
			local := filepath.Base(path)
			if imp.Name != nil {
				local = imp.Name.Name
			}
			internal[local] = true
		}
		uses := func(n ast.Node) string {
			found := ""
			ast.Inspect(n, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && internal[id.Name] && found == "" {
						found = id.Name + "." + sel.Sel.Name
					}
				}
				return found == ""
			})
			return found
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() || (d.Recv != nil && !exportedRecv(d.Recv)) {
					continue
				}
				if u := uses(d.Type); u != "" {
					bad = append(bad, fset.Position(d.Pos()).String()+": func "+d.Name.Name+" uses "+u)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if vs, ok := s.(*ast.ValueSpec); ok {
						if u := exportedConstUse(d.Tok, vs, uses); u != "" {
							bad = append(bad, fset.Position(vs.Pos()).String()+": "+u)
						}
						continue
					}
					ts, ok := s.(*ast.TypeSpec)
					if !ok || !ts.Name.IsExported() {
						continue
					}
					if aliasesAllowed[ts.Name.Name] {
						continue
					}
					if ts.Assign != 0 {
						bad = append(bad, fset.Position(ts.Pos()).String()+": type "+ts.Name.Name+" is an alias: go doc shows none of its methods")
						continue
					}
					if u := exportedFieldUse(ts, uses); u != "" {
						bad = append(bad, fset.Position(ts.Pos()).String()+": type "+ts.Name.Name+" uses "+u)
					}
				}
			}
		}
	}
	return bad
}

// exportedRecv reports whether a method's receiver type is exported.
func exportedRecv(r *ast.FieldList) bool {
	e := r.List[0].Type
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	switch x := e.(type) {
	case *ast.IndexExpr:
		e = x.X
	case *ast.IndexListExpr:
		e = x.X
	}
	id, ok := e.(*ast.Ident)
	return ok && id.IsExported()
}

// exportedConstUse names an exported constant or variable of vs that go
// doc would show with an internal name ("" if none): declared with an
// internal type (const Insert delta.Op, which users cannot spell), or with
// a value that names an internal package (const Skip = schedule.Skip, var
// ErrX = errs.ErrX), which go doc prints instead of the value and its doc.
func exportedConstUse(tok token.Token, vs *ast.ValueSpec, uses func(ast.Node) string) string {
	if tok != token.CONST && tok != token.VAR {
		return ""
	}
	for i, n := range vs.Names {
		if !n.IsExported() {
			continue
		}
		if vs.Type != nil {
			if u := uses(vs.Type); u != "" {
				return tok.String() + " " + n.Name + " has type " + u
			}
		}
		if i < len(vs.Values) {
			if u := uses(vs.Values[i]); u != "" {
				return tok.String() + " " + n.Name + " is " + u + ": go doc shows that, not its value"
			}
		}
	}
	return ""
}

// exportedFieldUse is the first internal name an exported part of ts uses:
// an exported struct field's type or interface method, or the whole type if
// it is neither (an unexported method seals an interface; users never see
// its signature).
func exportedFieldUse(ts *ast.TypeSpec, uses func(ast.Node) string) string {
	var fields *ast.FieldList
	switch t := ts.Type.(type) {
	case *ast.StructType:
		fields = t.Fields
	case *ast.InterfaceType:
		fields = t.Methods
	default:
		return uses(ts.Type)
	}
	for _, f := range fields.List {
		for _, n := range f.Names {
			if n.IsExported() {
				if u := uses(f.Type); u != "" {
					return u
				}
			}
		}
	}
	return ""
}

// The codes users read in go doc are the ones the engine writes.
func TestErrorCodesAreTheEngines(t *testing.T) {
	for got, want := range map[Code]errs.Code{
		CodeInvalidConfig: errs.CodeInvalidConfig, CodeInvalidArgument: errs.CodeInvalidArgument, CodeNotFound: errs.CodeNotFound,
		CodeFenced: errs.CodeFenced, CodeUnregistered: errs.CodeUnregistered, CodeDecode: errs.CodeDecode,
		CodeHandlerPanic: errs.CodeHandlerPanic, CodeHandler: errs.CodeHandler, CodeDeadline: errs.CodeDeadline,
		CodeClusterMismatch: errs.CodeClusterMismatch, CodeLocked: errs.CodeLocked, CodeUnavailable: errs.CodeUnavailable,
		CodeDeadLettered: errs.CodeDeadLettered, CodeCancelled: errs.CodeCancelled, CodeNonDeterminism: errs.CodeNonDeterminism,
		CodeUnauthenticated: errs.CodeUnauthenticated, CodeNotOwner: errs.CodeNotOwner, CodeAlreadyExists: errs.CodeAlreadyExists,
		CodePermission: errs.CodePermission, CodeInternal: errs.CodeInternal,
	} {
		if errs.Code(got) != want {
			t.Errorf("code %q, the engine's %q", got, want)
		}
	}
}
