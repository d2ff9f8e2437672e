// OpenURL, the CLI's way to the store, on URLs it cannot use.
package schedule

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
)

// TestOpenURLHidesPassword: OpenURL shows the password of a URL it cannot
// use neither in its error text nor in its encoded (wire) form. (Moved
// from internal/store/open, which OpenURL now builds on.)
func TestOpenURLHidesPassword(t *testing.T) {
	const pw = "S3cr3tPw"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, raw := range []string{
		"mysql://root:" + pw + "@127.0.0.1:bad/db",
		"mariadb://root:" + pw + "/x@127.0.0.1:3306/db",
		"mysql://root:" + pw + "%zz@127.0.0.1/db",
		"postgres://app:" + pw + "@127.0.0.1:bad/db",
		"postgres://app:" + pw + "/x@127.0.0.1:5432/db",
		"postgres://app:" + pw + "@127.0.0.1:5432/db?sslmode=bogus",
		"postgres://app@127.0.0.1:5432/db?password=" + pw + "&sslmode=bogus",
	} {
		_, err := OpenURL(ctx, raw, "")
		if err == nil {
			t.Errorf("schedule.OpenURL %s: opened", raw)
			continue
		}
		if strings.Contains(err.Error(), pw) || strings.Contains(string(errs.Encode(err)), pw) {
			t.Errorf("schedule.OpenURL %s: error shows the password: %v", raw, err)
		}
	}
}
