package lint

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// sharedCopy matches a hand-written "is this a shared SQL database" test:
// the three server dialects listed together (without the local ones, as a
// list of every dialect would), or the two local ones excluded together.
var (
	threeServers = regexp.MustCompile(`store\.Postgres\b.*store\.MariaDB\b.*store\.MySQL\b`)
	twoLocal     = regexp.MustCompile(`[!=]= store\.(SQLite|Memory) *(\|\||&&) *[^;{]*[!=]= store\.(SQLite|Memory)\b`)
)

// One predicate says whether a dialect's database is shared by several
// processes: store.Dialect.Shared. It used to be written out in six
// packages.
func TestOneSharedDatabasePredicate(t *testing.T) {
	for dir, files := range sourceDirs(t) {
		if dir == filepath.Join("internal", "store") {
			continue // where Shared is defined
		}
		for _, name := range files {
			b, err := os.ReadFile(filepath.Join(moduleRoot, dir, name))
			if err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(string(b), "\n") {
				if threeServers.MatchString(line) && !strings.Contains(line, "store.SQLite") || twoLocal.MatchString(line) {
					t.Errorf("%s:%d: use store.Dialect.Shared() instead of listing dialects: %s", filepath.Join(dir, name), i+1, strings.TrimSpace(line))
				}
			}
		}
	}
}
