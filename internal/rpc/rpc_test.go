package rpc

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/voltro/voltro/internal/errs"
)

func TestSignedCallsAndRefusals(t *testing.T) {
	var woke atomic.Value
	var refused atomic.Int64
	srv := NewServer("s3cret", Handlers{
		Wake:  func(s []string) { woke.Store(strings.Join(s, ",")) },
		Reply: func(int64) {},
		Volatile: func(_ context.Context, r VolatileRequest) ([]byte, error) {
			if r.EntityID == "bad" {
				return nil, errs.New(errs.CodeNotOwner, "not mine")
			}
			return append([]byte("echo:"), r.Payload...), nil
		},
	}, slog.New(slog.NewTextHandler(io.Discard, nil)), func() { refused.Add(1) })
	ts := httptest.NewServer(srv)
	defer ts.Close()
	addr := strings.TrimPrefix(ts.URL, "http://")
	ctx := context.Background()

	c := NewClient("s3cret", "me:1")
	if err := c.Ping(ctx, addr); err != nil {
		t.Fatal(err)
	}
	if err := c.Wake(ctx, addr, []string{"default/1", "default/2"}); err != nil || woke.Load() != "default/1,default/2" {
		t.Fatalf("wake: %v %v", err, woke.Load())
	}
	got, err := c.Volatile(ctx, addr, VolatileRequest{EntityID: "x", Payload: []byte("hi")})
	if err != nil || string(got) != "echo:hi" {
		t.Fatalf("volatile: %q %v", got, err)
	}
	if _, err := c.Volatile(ctx, addr, VolatileRequest{EntityID: "bad"}); !errors.Is(err, errs.ErrNotOwner) {
		t.Fatalf("remote error code lost: %v", err)
	}

	wrong := NewClient("other", "me:1")
	if err := wrong.Ping(ctx, addr); !errors.Is(err, errs.ErrUnauthenticated) {
		t.Fatalf("wrong secret: %v", err)
	}
	resp, err := http.Post(ts.URL+PathWake, "application/json", strings.NewReader(`{"shards":["x"]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unsigned call: %d", resp.StatusCode)
	}
	if refused.Load() != 2 {
		t.Fatalf("refusals counted: %d", refused.Load())
	}
	if woke.Load() != "default/1,default/2" {
		t.Fatal("an unsigned wake was acted on")
	}
}
