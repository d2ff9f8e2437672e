package open

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/voltro/voltro/internal/dburl"
	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

// TestMissingDriverNamesTheImport: this test binary imports no driver
// package, so every SQL dialect is missing; the error says which import to
// add, redacts the URL and is an invalid configuration. Memory is built in.
func TestMissingDriverNamesTheImport(t *testing.T) {
	const pw = "S3cr3tPw"
	for raw, imp := range map[string]string{
		"postgres://u:" + pw + "@127.0.0.1:5432/db": "github.com/voltro/voltro/driver/postgres",
		"mariadb://u:" + pw + "@127.0.0.1:3306/db":  "github.com/voltro/voltro/driver/mysql",
		"mysql://u:" + pw + "@127.0.0.1:3306/db":    "github.com/voltro/voltro/driver/mysql",
		"sqlite:" + t.TempDir() + "/x.db":           "github.com/voltro/voltro/driver/sqlite",
	} {
		r, err := dburl.Resolve(raw, "")
		if err != nil {
			t.Fatalf("resolve %s: %v", raw, err)
		}
		_, err = DB(context.Background(), r, nil)
		var e *errs.Error
		if !errors.As(err, &e) || e.Code != errs.CodeInvalidConfig {
			t.Fatalf("%s: %v, want %s", raw, err, errs.CodeInvalidConfig)
		}
		msg := err.Error()
		if !strings.Contains(msg, `import _ "`+imp+`"`) || !strings.Contains(msg, "(dialect "+string(r.Dialect)+")") {
			t.Errorf("%s: %q does not name the import %s", raw, msg, imp)
		}
		if strings.Contains(msg, pw) {
			t.Errorf("%s: %q shows the password", raw, msg)
		}
	}
	d, err := DB(context.Background(), dburl.Resolved{Dialect: store.Memory}, nil)
	if err != nil {
		t.Fatalf("memory: %v", err)
	}
	_ = d.Close()
	if ds := Dialects(); len(ds) != 1 || ds[0] != store.Memory {
		t.Errorf("Dialects() = %v, want only memory", ds)
	}
}
