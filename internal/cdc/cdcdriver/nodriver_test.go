package cdcdriver_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/voltro/voltro/internal/cdc"
	"github.com/voltro/voltro/internal/cdc/delta"
	"github.com/voltro/voltro/internal/errs"
)

// This test binary links no driver package: the feed opens on memory (its
// data API naming the SQLite import), and refuses SQL dialects naming
// theirs.
func TestFeedWithoutDrivers(t *testing.T) {
	ctx := context.Background()
	wantImport := func(what string, err error, imp string) {
		t.Helper()
		var e *errs.Error
		if !errors.As(err, &e) || e.Code != errs.CodeInvalidConfig || !strings.Contains(err.Error(), `import _ "`+imp+`"`) {
			t.Errorf("%s: %v, want invalid_config naming %s", what, err, imp)
		}
	}
	f, err := cdc.New(ctx, cdc.Config{URL: "memory:"})
	if err != nil {
		t.Fatalf("memory feed: %v", err)
	}
	defer f.Close()
	if f.Transport() != cdc.Bus {
		t.Errorf("memory transport %s", f.Transport())
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if _, err := f.Subscribe(sctx, "items", nil); err != nil {
		t.Errorf("subscribe: %v", err)
	}
	_, err = f.Insert(ctx, "items", delta.Row{"id": 1})
	wantImport("memory insert", err, "github.com/voltro/voltro/driver/sqlite")

	for url, imp := range map[string]string{
		"postgres://u:pw@127.0.0.1:1/db":  "github.com/voltro/voltro/driver/postgres",
		"mariadb://u:pw@127.0.0.1:1/db":   "github.com/voltro/voltro/driver/mysql",
		"sqlite:" + t.TempDir() + "/x.db": "github.com/voltro/voltro/driver/sqlite",
	} {
		_, err := cdc.New(ctx, cdc.Config{URL: url})
		wantImport(url, err, imp)
		if err != nil && strings.Contains(err.Error(), ":pw@") {
			t.Errorf("%s: error shows the password: %v", url, err)
		}
	}
}
