package lint

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// moduleRoot is the repository root, two levels above this package.
const moduleRoot = "../.."

// sourceDirs maps each directory holding non-test .go files (relative to the
// module root) to those files' names. testdata, hidden and underscore
// directories are skipped, as the go tool skips them.
func sourceDirs(t *testing.T) map[string][]string {
	t.Helper()
	dirs := map[string][]string{}
	err := filepath.WalkDir(moduleRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != moduleRoot && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(moduleRoot, filepath.Dir(path))
		if err != nil {
			return err
		}
		dirs[rel] = append(dirs[rel], name)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// TestPackageDocs fails when a package has no doc.go carrying its package
// comment, or when a file other than doc.go has a comment attached to its
// package clause (a file comment must be separated from it by a blank line).
func TestPackageDocs(t *testing.T) {
	dirs := sourceDirs(t)
	if len(dirs) == 0 {
		t.Fatal("no Go source found under the module root")
	}
	keys := make([]string, 0, len(dirs))
	for dir := range dirs {
		keys = append(keys, dir)
	}
	sort.Strings(keys)
	var missing, attached []string
	for _, dir := range keys {
		hasDoc := false
		for _, name := range dirs[dir] {
			path := filepath.Join(moduleRoot, dir, name)
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			rel := filepath.ToSlash(filepath.Join(dir, name))
			if name == "doc.go" {
				if f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "" {
					hasDoc = true
				}
				continue
			}
			if f.Doc != nil {
				attached = append(attached, rel)
			}
		}
		if !hasDoc {
			missing = append(missing, filepath.ToSlash(dir))
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d packages have no doc.go with a package comment:\n\t%s", len(missing), strings.Join(missing, "\n\t"))
	}
	if len(attached) > 0 {
		t.Errorf("%d files other than doc.go have a comment attached to the package clause (add a blank line, move the package comment to doc.go):\n\t%s", len(attached), strings.Join(attached, "\n\t"))
	}
}
