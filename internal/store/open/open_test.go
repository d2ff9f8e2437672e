package open

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/mysql"
	"github.com/voltro/voltro/internal/store/postgres"
)

// TestOpenErrorsHidePassword: no store open path shows the password of a URL
// it cannot use, in its error text or its encoded (wire) form. (The
// schedule CLI's path, schedule.OpenURL, has the same test in its package.)
func TestOpenErrorsHidePassword(t *testing.T) {
	const pw = "S3cr3tPw"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	check := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: opened", what)
			return
		}
		if strings.Contains(err.Error(), pw) || strings.Contains(string(errs.Encode(err)), pw) {
			t.Errorf("%s: error shows the password: %v", what, err)
		}
	}
	for _, raw := range []string{
		"mysql://root:" + pw + "@127.0.0.1:bad/db",
		"mariadb://root:" + pw + "/x@127.0.0.1:3306/db",
		"mysql://root:" + pw + "%zz@127.0.0.1/db",
	} {
		_, err := mysql.Open(ctx, raw, mysql.Options{Dialect: store.MariaDB})
		check("mysql.Open "+raw, err)
	}
	for _, raw := range []string{
		"postgres://app:" + pw + "@127.0.0.1:bad/db",
		"postgres://app:" + pw + "/x@127.0.0.1:5432/db",
		"postgres://app:" + pw + "@127.0.0.1:5432/db?sslmode=bogus",
		"postgres://app@127.0.0.1:5432/db?password=" + pw + "&sslmode=bogus",
	} {
		_, err := postgres.Open(ctx, raw, postgres.Options{})
		check("postgres.Open "+raw, err)
	}
}
