package dburl

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/voltro/voltro/internal/errs"
)

const secret = "S3cr3tPw"

// badURLs each carry secret as the password and fail to parse or resolve.
var badURLs = []string{
	"mysql://root:" + secret + "@127.0.0.1:bad/db",
	"mariadb://root:" + secret + "@[::1/db",
	"mysql://root:" + secret + "/x@host/db",  // '/' in the password
	"mysql://root:" + secret + "%zz@host/db", // bad escape
	"postgres://app:" + secret + "@host:99999999999x/db",
	"postgres://app:" + secret + "@host/db?x=%zz",
	"postgresql://app:" + secret + "@ho st/db",
	"mysql:root:" + secret + "@host/db", // opaque: unknown scheme
	"pg://app:" + secret + "@host/db",   // unknown scheme
	"sqlite:?password=" + secret,
}

func TestRedactNeverReturnsThePassword(t *testing.T) {
	cases := append([]string{
		"postgres://app:" + secret + "@host/db",
		"postgres://app@host/db?password=" + secret,
		"postgres://app@host/db?sslpassword=" + secret + "&sslmode=require",
		"postgres://app@host/db?pass%77ord=" + secret,
		"postgres://app@host/db?password=" + secret + "%zz",
		"mysql://u:123?" + secret + "@host/db", // '?' in the password
		"mysql://u:123#" + secret + "@host/db", // '#' in the password
	}, badURLs...)
	for _, raw := range cases {
		if got := Redact(raw); strings.Contains(got, secret) {
			t.Errorf("Redact(%q) = %q: shows the password", raw, got)
		}
	}
	if got := Redact("postgres://app:pw@host:5432/db?sslmode=disable"); got != "postgres://app:xxxxx@host:5432/db?sslmode=disable" {
		t.Errorf("Redact of a good URL = %q", got)
	}
}

func TestResolveErrorHidesPassword(t *testing.T) {
	for _, raw := range badURLs {
		_, err := Resolve(raw, "")
		if err == nil {
			// some parse; the store's own open must then not leak it (open_test)
			continue
		}
		if !errors.Is(err, errs.ErrInvalidConfig) {
			t.Errorf("Resolve(%q): %v, want invalid_config", raw, err)
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(string(errs.Encode(err)), secret) {
			t.Errorf("Resolve(%q) error shows the password: %v", raw, err)
		}
	}
	// the MySQL path used to wrap the *url.Error, which quotes the raw URL
	if _, err := Resolve(badURLs[0], ""); err == nil || !strings.Contains(err.Error(), "root:xxxxx@") {
		t.Errorf("Resolve of a bad mysql URL: %v, want an error showing the redacted URL", err)
	}
	if _, err := Resolve(badURLs[4], ""); err == nil {
		t.Errorf("Resolve of an unparseable postgres URL succeeded")
	}
}

// FuzzResolve: neither Resolve nor Redact panics, and the password of a
// user:password@ URL never shows in Redact or in a Resolve error.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"mysql://", "postgres://", "mariadb://", "postgresql://", "sqlite:", "mysql:", ""} {
		f.Add(s, "root", secret, "127.0.0.1:3306/db?parseTime=true")
	}
	f.Add("mysql://", "root", "p/w@x", "host:bad/db")
	f.Add("postgres://", "a:b", "p?w#x", "[::1]:5432/db?password=x")
	f.Add("mysql://", "u", "123?abcdef", "h/db")
	f.Fuzz(func(t *testing.T, scheme, user, pw, rest string) {
		raw := scheme + user + ":" + pw + "@" + rest
		red := Redact(raw)
		_, err := Resolve(raw, "")
		Redact(scheme + user + rest) // must not panic either
		if len(pw) < 6 || strings.Contains(scheme+user+rest, pw) || strings.Contains(mask+"%", pw) {
			return // too short or not only in the password to tell
		}
		if strings.Contains(red, pw) {
			t.Errorf("Redact(%q) = %q shows the password", raw, red)
		}
		if err == nil {
			return
		}
		msg := strings.ReplaceAll(err.Error(), strconv.Quote(red), "") // checked above
		if strings.Contains(msg, pw) && !strings.Contains(notAURL("").Error(), pw) {
			t.Errorf("Resolve(%q) error %q shows the password", raw, err)
		}
	})
}
