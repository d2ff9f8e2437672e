package mysql_test

// A COMMIT to a server that stops answering returns when its context ends:
// the store reaches MariaDB through a loopback proxy that, once armed, stops
// passing the server's bytes as soon as the client sends COMMIT (the way a
// paused Galera node behaves), and the write must come back with the
// context's error instead of blocking until the connection dies.

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/mysql"
)

// freezingProxy forwards loopback connections to target; once armed, the
// first COMMIT a client sends freezes it: nothing more passes from the
// server to the clients (connections stay open).
type freezingProxy struct {
	ln     net.Listener
	target string
	armed  atomic.Bool
	frozen chan struct{} // closed by freeze
	once   sync.Once
}

func startFreezingProxy(t *testing.T, target string) *freezingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezingProxy{ln: ln, target: target, frozen: make(chan struct{})}
	t.Cleanup(func() { ln.Close() })
	go p.accept(t)
	return p
}

func (p *freezingProxy) freeze() { p.once.Do(func() { close(p.frozen) }) }

func (p *freezingProxy) accept(t *testing.T) {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		t.Cleanup(func() { c.Close(); s.Close() })
		go func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					if _, werr := s.Write(buf[:n]); werr != nil {
						return
					}
					if p.armed.Load() && bytes.Contains(buf[:n], []byte("COMMIT")) {
						p.freeze()
					}
				}
				if err != nil {
					return
				}
			}
		}()
		go func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := s.Read(buf)
				select {
				case <-p.frozen:
					return // the server "stopped answering": hold the connection, pass nothing
				default:
				}
				if n > 0 {
					if _, werr := c.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

func TestCommitReturnsWhenTheServerStopsAnswering(t *testing.T) {
	_, url := fresh(t, "commitctx", mysql.Options{})
	ctx := ctxT(t)
	i := strings.Index(url, "@") + 1
	j := i + strings.Index(url[i:], "/")
	p := startFreezingProxy(t, url[i:j])
	w := open(t, url[:i]+p.ln.Addr().String()+url[j:], mysql.Options{})
	// Over the size the store sends as one multi-statement round trip, so
	// the batch is an ordinary transaction ending in a COMMIT of its own.
	var rec store.IntrospectionBatch
	for range 40 {
		rec.Events = append(rec.Events, store.EventRecord{ExecutionID: "r", At: time.Now(), Kind: "started", Detail: strings.Repeat("d", 32<<10), ReplicaID: "x"})
	}
	if err := w.Record(ctx, rec); err != nil {
		t.Fatalf("a write through the proxy before it freezes: %v", err)
	}
	p.armed.Store(true)
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Record(wctx, rec) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("the write to a server that stopped answering: %v, want the context's deadline", err)
		}
	case <-time.After(45 * time.Second):
		t.Fatal("the write's COMMIT is still waiting on a server that stopped answering, 43 s after its context ended")
	}
	select {
	case <-p.frozen:
	default:
		t.Fatal("the proxy never saw the COMMIT: the test did not test it")
	}
}
