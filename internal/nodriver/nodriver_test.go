// Package nodriver_test is a program that imports voltro and no driver
// package: what its users see when DB_URL names a database it did not
// import.
package nodriver_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/errs"
)

func TestNewWithoutTheDriverNamesTheImport(t *testing.T) {
	const pw = "S3cr3tPw"
	quiet := voltro.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	for url, imp := range map[string]string{
		"postgres://app:" + pw + "@127.0.0.1:5432/postgres": "github.com/voltro/voltro/driver/postgres",
		"mariadb://root:" + pw + "@127.0.0.1:3306/voltro":   "github.com/voltro/voltro/driver/mysql",
		"sqlite:" + t.TempDir() + "/app.db":                 "github.com/voltro/voltro/driver/sqlite",
	} {
		app, err := voltro.New(context.Background(), voltro.WithDB(url), quiet)
		if err == nil {
			_ = app.Close(context.Background())
			t.Fatalf("%s: opened without its driver", url)
		}
		t.Logf("%s: %v", url, err)
		var e *errs.Error
		if !errors.As(err, &e) || e.Code != errs.CodeInvalidConfig {
			t.Errorf("%s: %v, want %s", url, err, errs.CodeInvalidConfig)
		}
		if !strings.Contains(err.Error(), `import _ "`+imp+`"`) || !strings.Contains(err.Error(), "no driver for") {
			t.Errorf("%s: %q does not name the import %s", url, err, imp)
		}
		if strings.Contains(err.Error(), pw) {
			t.Errorf("%s: %q shows the password", url, err)
		}
	}
	app, err := voltro.New(context.Background(), voltro.WithDB("memory:"), quiet)
	if err != nil {
		t.Fatalf("memory: %v", err)
	}
	_ = app.Close(context.Background())
}
