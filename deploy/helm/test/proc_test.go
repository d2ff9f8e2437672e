package test

// What the boot test needs around the process: the voltro binary built from
// the repository, a PostgreSQL database, an address standing in for the pod
// IP, the container's env resolved as the kubelet would, a log that can be
// waited on, and one polling wait.

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// waitFor polls cond every 50 ms until it holds, failing the test after
// within. The module's one polling wait (internal/testwait's, which this
// separate module cannot import).
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// buildVoltro builds ./cmd/voltro of the repository this module sits in.
func buildVoltro(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "voltro")
	start := time.Now()
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/voltro")
	cmd.Dir = filepath.Join("..", "..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/voltro: %v\n%s", err, out)
	}
	t.Logf("built voltro in %s", time.Since(start).Round(time.Millisecond))
	return bin
}

// postgresDB recreates database voltro_t_<name> on the test server
// (VOLTRO_TEST_POSTGRES_URL, as internal/testdb) with psql, and returns
// its URL.
func postgresDB(t *testing.T, name string) string {
	t.Helper()
	admin := os.Getenv("VOLTRO_TEST_POSTGRES_URL")
	if admin == "" {
		admin = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	db := "voltro_t_" + name
	cmd := exec.Command("psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", admin,
		"-c", "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)", "-c", "CREATE DATABASE "+db)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("psql %s (run scripts/test to start PostgreSQL): %v\n%s", admin, err, out)
	}
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("VOLTRO_TEST_POSTGRES_URL: %v", err)
	}
	u.Path = "/" + db
	return u.String()
}

// podIP is an address of this machine that is not loopback, standing in
// for the pod IP: a loopback runner address would be flagged
// (localhostRisk), as it should be.
func podIP(t *testing.T) string {
	t.Helper()
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
				return n.IP.String()
			}
		}
	}
	t.Fatal("no non-loopback IPv4 address on this machine to stand in for the pod IP")
	return ""
}

// freePort is a TCP port free on ip now.
func freePort(t *testing.T, ip string) int {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// pod is what the kubelet would fill in for one pod.
type pod struct {
	name, ip string
	secret   map[string]string // the Secret's data
	mounts   map[string]string // emptyDir mount path -> a directory here
}

// resolveEnv turns the container's env into the process environment, as
// the kubelet does: downward-API fields, Secret keys (a missing optional
// key leaves the variable unset, a missing required one stops the pod) and
// $(VAR) references to variables defined earlier. Paths under an emptyDir
// mount are moved to the directory standing in for it.
func resolveEnv(t *testing.T, env []corev1.EnvVar, p pod) []string {
	t.Helper()
	defined := map[string]string{}
	var out []string
	ref := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	for _, e := range env {
		var v string
		switch {
		case e.ValueFrom == nil:
			v = ref.ReplaceAllStringFunc(e.Value, func(m string) string {
				if d, ok := defined[m[2:len(m)-1]]; ok {
					return d
				}
				return m // Kubernetes leaves an undefined reference as written
			})
		case e.ValueFrom.FieldRef != nil:
			switch f := e.ValueFrom.FieldRef.FieldPath; f {
			case "metadata.name":
				v = p.name
			case "status.podIP":
				v = p.ip
			default:
				t.Fatalf("%s: downward-API field %s not substituted by this test", e.Name, f)
			}
		case e.ValueFrom.SecretKeyRef != nil:
			r := e.ValueFrom.SecretKeyRef
			d, ok := p.secret[r.Key]
			if !ok {
				if r.Optional != nil && *r.Optional {
					continue
				}
				t.Fatalf("%s: the Secret has no key %s and the reference is not optional: the pod would not start", e.Name, r.Key)
			}
			v = d
		default:
			t.Fatalf("%s: valueFrom %+v not substituted by this test", e.Name, e.ValueFrom)
		}
		v = p.moved(v)
		defined[e.Name] = v
		out = append(out, e.Name+"="+v)
	}
	return out
}

// moved is path on the directory standing in for the deepest mount it is
// under, once; anything else unchanged.
func (p pod) moved(path string) string {
	best := ""
	for mount := range p.mounts {
		if (path == mount || strings.HasPrefix(path, mount+"/")) && len(mount) > len(best) {
			best = mount
		}
	}
	if best == "" {
		return path
	}
	return p.mounts[best] + strings.TrimPrefix(path, best)
}

// logLines collects a stream's lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
	done  chan struct{}
}

func collect(r io.Reader) *logLines {
	l := &logLines{done: make(chan struct{})}
	go func() {
		defer close(l.done)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			l.mu.Lock()
			l.lines = append(l.lines, sc.Text())
			l.mu.Unlock()
		}
	}()
	return l
}

// find returns the first line containing every one of parts, or "".
func (l *logLines) find(parts ...string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return line
		}
	}
	return ""
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// filesIn lists a directory's entries.
func filesIn(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func hostPort(ip string, port int) string { return net.JoinHostPort(ip, fmt.Sprint(port)) }
