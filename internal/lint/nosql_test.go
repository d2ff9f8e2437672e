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

// sqlText matches what only SQL says: statements, DDL, server catalogues
// and session variables.
var sqlText = regexp.MustCompile(`(?i)\b(SELECT\s+\S|INSERT\s+INTO|UPDATE\s+\S+\s+SET|DELETE\s+FROM|(CREATE|DROP|ALTER)\s+(OR\s+REPLACE\s+)?(TEMPORARY\s+)?(TABLE|DATABASE|TRIGGER|FUNCTION|INDEX|VIEW)|ANALYZE\s+\S|SHOW\s+(GRANTS|VARIABLES|CREATE|TABLES|MASTER|BINARY)|PRAGMA\s|information_schema|pg_stat_|pg_database|pg_advisory|pg_notify\(|sqlite_master|@@[a-z_]+)`)

// sqlHomes are the only directories whose non-test code may hold SQL text:
// the store and its drivers, and the test databases' own set-up.
var sqlHomes = []string{"internal/store", "internal/testdb"}

// Issue 13's rule, checked: only the store packages speak SQL. Everything
// else reaches the database through the store contract.
func TestNoSQLOutsideTheStore(t *testing.T) {
	fset := token.NewFileSet()
	for dir, files := range sourceDirs(t) {
		if home(dir) {
			continue
		}
		for _, name := range files {
			path := filepath.Join(moduleRoot, dir, name)
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				if s, err := strconv.Unquote(lit.Value); err == nil && sqlText.MatchString(s) {
					t.Errorf("%s/%s:%d: SQL text %q outside the store packages: move it behind the store contract",
						dir, name, fset.Position(lit.Pos()).Line, s)
				}
				return true
			})
		}
	}
}

func home(dir string) bool {
	dir = filepath.ToSlash(dir)
	for _, h := range sqlHomes {
		if dir == h || strings.HasPrefix(dir, h+"/") {
			return true
		}
	}
	return false
}
