// The feed speaks no SQL: every statement it runs is a store package's
// (store/rowsql, store/postgres, store/mysql). This fails when SQL text
// comes back into a non-test file under internal/cdc.
package cdc

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var sqlText = regexp.MustCompile(`(?i)\b(SELECT\s+\S|INSERT\s+INTO|UPDATE\s+\S+\s+SET|DELETE\s+FROM|(CREATE|DROP|ALTER)\s+(OR\s+REPLACE\s+)?(TABLE|TRIGGER|FUNCTION|INDEX|VIEW)|LISTEN\s+[a-z_]+_v\d|SHOW\s+(GRANTS|VARIABLES|CREATE|TABLES)|PRAGMA\s|pg_advisory|pg_notify\(|@@[a-z_]+|^\s*(UN)?LISTEN\s+$)`)

func TestNoSQLOutsideTheStore(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err == nil && sqlText.MatchString(s) {
				t.Errorf("%s: SQL text %q: move it behind the store seam", fset.Position(lit.Pos()), s)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
