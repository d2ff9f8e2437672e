package main

// A database that does not listen (a wrong port) is named once: pgx dials
// twice under sslmode=prefer, and both attempts failed the same way.

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/voltro/voltro/internal/golden"
)

func TestConnectRefusedSaysTheDialOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close() // nothing listens there now
	env := map[string]string{"DB_URL": "postgres://postgres@127.0.0.1:" + port + "/voltro_nowhere?connect_timeout=5"}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"workflows", "list"}, func(k string) string { return env[k] }, &out, &errb); code != 1 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if n := strings.Count(errb.String(), "dial tcp"); n != 1 {
		t.Errorf("the dial failure is said %d times:\n%s", n, errb.String())
	}
	golden.Check(t, "connect_refused.golden", []byte(strings.ReplaceAll(errb.String(), port, "PORT")))
}
