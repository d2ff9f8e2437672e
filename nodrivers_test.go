package voltro_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCoreLinksNoDriver: a program that imports voltro links no database
// driver until it imports one (driver/postgres, driver/mysql,
// driver/sqlite), as with database/sql. The CLI imports them all.
func TestCoreLinksNoDriver(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	forbidden := []string{
		"github.com/voltro/voltro/internal/store/postgres",
		"github.com/voltro/voltro/internal/store/mysql",
		"github.com/voltro/voltro/internal/store/sqlite",
		"github.com/voltro/voltro/internal/cdc/binlog",
		"github.com/voltro/voltro/internal/cdc/pgnotify",
		"github.com/voltro/voltro/driver/",
		"modernc.org/sqlite",
		"github.com/jackc/pgx",
		"github.com/go-sql-driver/mysql",
		"github.com/go-mysql-org/go-mysql",
		"github.com/pingcap/",
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/voltro/voltro").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if p == f || strings.HasPrefix(p, f+"/") || (strings.HasSuffix(f, "/") && strings.HasPrefix(p, f)) {
				t.Errorf("the core links %s (forbidden: %s); a driver package must register it instead", p, f)
			}
		}
	}
}
