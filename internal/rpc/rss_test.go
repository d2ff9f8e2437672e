package rpc

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRSSChild is the server process of TestUnsignedFloodKeepsRSS: it
// serves the runner port with the production http.Server and prints its
// address, until stdin closes.
func TestRSSChild(t *testing.T) {
	if os.Getenv("VOLTRO_RPC_RSS_CHILD") != "1" {
		t.Skip("the child process of TestUnsignedFloodKeepsRSS")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer((&recorder{}).handlers(), ServerOptions{Self: ln.Addr().String(), Secrets: []string{"s3cret-0123456789"}, Logger: quiet})
	go func() { _ = s.HTTPServer().Serve(ln) }()
	fmt.Println("ADDR", ln.Addr().String())
	_, _ = io.Copy(io.Discard, os.Stdin)
}

func rssBytes(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// Eight parallel 64 MiB bodies, unsigned or signed but oversized, cost the
// server a header read each: its RSS stays within 50 MB of idle.
func TestUnsignedFloodKeepsRSS(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRSSChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "VOLTRO_RPC_RSS_CHILD=1")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	var addr string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
			addr = a
			break
		}
	}
	if addr == "" {
		t.Fatal("the child printed no address")
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	pid := cmd.Process.Pid
	// Warm up: a signed call, so idle includes a served request.
	if err := NewClient("s3cret-0123456789", "me:1").Ping(t.Context(), addr); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	idle := rssBytes(t, pid)

	var peak int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if r := rssBytes(t, pid); r > peak {
				peak = r
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	const size = 64 << 20
	var wg sync.WaitGroup
	refused := make([]int, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+PathVolatile, io.LimitReader(zeros{}, size))
			req.ContentLength = size
			if i%2 == 1 { // signed, with the digest of a small body: refused for its size
				setHeaders(req.Header, []byte("s3cret-0123456789"), http.MethodPost, PathVolatile, "me:1", addr, []byte("{}"), time.Now())
			}
			resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
			if err != nil {
				refused[i] = -1 // the server closed before we finished writing: also refused
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			refused[i] = resp.StatusCode
		}()
	}
	wg.Wait()
	time.Sleep(200 * time.Millisecond)
	close(stop)
	<-sampled
	for i, code := range refused {
		if code != -1 && code != http.StatusUnauthorized && code != http.StatusRequestEntityTooLarge {
			t.Errorf("flood call %d answered %d", i, code)
		}
	}
	t.Logf("server RSS idle %d MB, peak %d MB", idle>>20, peak>>20)
	if peak-idle > 50<<20 {
		t.Fatalf("RSS grew by %d MB under 8 unsigned and 8 oversized 64 MiB bodies", (peak-idle)>>20)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
