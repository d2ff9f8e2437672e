// The bench package speaks no SQL: what it reads and writes goes through
// the store contract (store.Overviewer, store/bench.go's optional interfaces).
// This fails when SQL text comes back into a non-test file of internal/bench.

package bench

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var sqlText = regexp.MustCompile(`(?i)\b(SELECT\s+\S|INSERT\s+INTO|UPDATE\s+\S+\s+SET|DELETE\s+FROM|(CREATE|DROP|ALTER)\s+(TABLE|DATABASE|INDEX|VIEW)|ANALYZE\s+\S|information_schema|pg_stat_|pg_database|sqlite_master|current_schema\(|UTC_TIMESTAMP|strftime\(|julianday\()`)

func TestNoSQLOutsideTheStore(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err == nil && sqlText.MatchString(s) {
				t.Errorf("%s: SQL text %q: move it behind the store contract", fset.Position(lit.Pos()), s)
			}
			return true
		})
	}
}
