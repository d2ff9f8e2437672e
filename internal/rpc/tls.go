package rpc

// TLS for the runner port (VOLTRO_RUNNER_TLS_*): one certificate that this
// runner serves and presents to peers, and an optional CA that makes the
// TLS mutual. The files are read at boot and read again when they change.

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/voltro/voltro/internal/errs"
)

// The settings of the runner port's TLS, named in errors and logs.
const (
	EnvTLSCert       = "VOLTRO_RUNNER_TLS_CERT"
	EnvTLSKey        = "VOLTRO_RUNNER_TLS_KEY"
	EnvTLSCA         = "VOLTRO_RUNNER_TLS_CA"
	EnvTLSServerName = "VOLTRO_RUNNER_TLS_SERVER_NAME"
)

// DefaultTLSReload is how often the TLS files are checked for a change (a
// stat of each, done by the next handshake or call that needs them).
const DefaultTLSReload = time.Minute

// TLSFiles are the PEM files of the runner port's TLS.
type TLSFiles struct {
	// Cert is this runner's certificate, followed by any intermediates;
	// Key its private key. Both or neither.
	Cert, Key string
	// CA, when set, makes TLS mutual: the server requires a client
	// certificate that chains to it, and clients verify servers against it
	// instead of the system roots.
	CA string
	// ServerName, when set, is the name a peer's server certificate must
	// hold; otherwise the host of the runner address dialled (an IP SAN for
	// a pod IP, a DNS SAN for a name).
	ServerName string
}

// TLS is the runner port's TLS, shared by its server and its client.
type TLS struct {
	files       TLSFiles
	reloadEvery time.Duration

	mu      sync.Mutex
	cur     *tlsMaterial
	stamps  []fileStamp
	checked time.Time
	host    string // as given to Check: under mutual TLS a reload must pass it too
}

// tlsMaterial is one loaded generation of the files.
type tlsMaterial struct {
	cert       tls.Certificate
	roots      *x509.CertPool // servers are verified against it; nil: the system roots
	clientCAs  *x509.CertPool // nil: no client certificate asked for
	serverName string
	server     *tls.Config
	client     *tls.Config
}

type fileStamp struct {
	size int64
	mod  time.Time
}

// LoadTLS reads the files. Errors are invalid_config and name the setting.
func LoadTLS(f TLSFiles) (*TLS, error) {
	t := &TLS{files: f, reloadEvery: DefaultTLSReload}
	m, stamps, err := t.load()
	if err != nil {
		return nil, err
	}
	t.cur, t.stamps, t.checked = m, stamps, time.Now()
	return t, nil
}

// newStaticTLS is TLS from material in memory (tests): never reloaded.
func newStaticTLS(cert tls.Certificate, roots, clientCAs *x509.CertPool, serverName string) *TLS {
	return &TLS{cur: newMaterial(cert, roots, clientCAs, serverName)}
}

// Files are the files read.
func (t *TLS) Files() TLSFiles { return t.files }

// Mutual reports whether client certificates are required.
func (t *TLS) Mutual() bool { return t.material(nil).clientCAs != nil }

// Leaf is this runner's certificate as now loaded.
func (t *TLS) Leaf() *x509.Certificate { return t.material(nil).cert.Leaf }

// String is for logs: the mode, the certificate's names and expiry.
func (t *TLS) String() string {
	m := t.material(nil)
	mode := "TLS (peers verified against the system roots, no client certificate asked)"
	if m.clientCAs != nil {
		mode = "mutual TLS (" + EnvTLSCA + ")"
	}
	leaf := m.cert.Leaf
	names := append(append([]string(nil), leaf.DNSNames...), ipStrings(leaf)...)
	s := fmt.Sprintf("%s, certificate for %v expires %s", mode, names, leaf.NotAfter.UTC().Format(time.RFC3339))
	if m.serverName != "" {
		s += ", peers must be certified for " + m.serverName
	}
	return s
}

func ipStrings(c *x509.Certificate) []string {
	var out []string
	for _, ip := range c.IPAddresses {
		out = append(out, ip.String())
	}
	return out
}

// Check verifies this runner's certificate the way its peers will: against
// the CA (or the system roots), for host (or the ServerName setting), for
// server use, and under mutual TLS for client use too. A certificate that
// fails would be refused by every peer. Under mutual TLS, files reloaded
// later must pass the same check, or the certificate loaded before stays.
func (t *TLS) Check(host string) error {
	m := t.material(nil)
	t.mu.Lock()
	t.host = host
	t.mu.Unlock()
	return t.verify(m, host)
}

func (t *TLS) verify(m *tlsMaterial, host string) error {
	name := host
	if m.serverName != "" {
		name = m.serverName
	}
	inter := x509.NewCertPool()
	for _, der := range m.cert.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(c)
		}
	}
	usages := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	if m.clientCAs != nil {
		usages = append(usages, x509.ExtKeyUsageClientAuth)
	}
	against := "the system roots (" + EnvTLSCA + " unset)"
	if m.roots != nil {
		against = EnvTLSCA + "=" + fmt.Sprintf("%q", t.files.CA)
	}
	for _, u := range usages {
		opts := x509.VerifyOptions{Roots: m.roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{u}}
		if u == x509.ExtKeyUsageServerAuth {
			opts.DNSName = name
		}
		if _, err := m.cert.Leaf.Verify(opts); err != nil {
			use := "serve the runner port"
			if u == x509.ExtKeyUsageClientAuth {
				use = "call peers (mutual TLS needs the clientAuth extended key usage as well as serverAuth)"
			}
			how := ""
			if u == x509.ExtKeyUsageServerAuth && m.serverName == "" {
				how = fmt.Sprintf("; peers dial %s, so the certificate needs it as a SAN, or set %s to a name every runner's certificate holds", host, EnvTLSServerName)
			}
			return errs.Wrap(errs.CodeInvalidConfig, err, fmt.Sprintf("%s=%q cannot %s: it does not verify against %s for %q%s", EnvTLSCert, t.files.Cert, use, against, name, how))
		}
	}
	return nil
}

// load reads the files once.
func (t *TLS) load() (*tlsMaterial, []fileStamp, error) {
	f := t.files
	bad := func(env, path string, err error, why string) error {
		if err != nil {
			return errs.Wrap(errs.CodeInvalidConfig, err, fmt.Sprintf("%s=%q %s", env, path, why))
		}
		return errs.New(errs.CodeInvalidConfig, "%s=%q %s", env, path, why)
	}
	var stamps []fileStamp
	read := func(env, path string) ([]byte, error) {
		// Stat first: a file replaced between the two is read again at
		// the next check.
		st, err := os.Stat(path)
		if err != nil {
			return nil, bad(env, path, err, "cannot be read")
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, bad(env, path, err, "cannot be read")
		}
		stamps = append(stamps, fileStamp{size: st.Size(), mod: st.ModTime()})
		return b, nil
	}
	certPEM, err := read(EnvTLSCert, f.Cert)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := read(EnvTLSKey, f.Key)
	if err != nil {
		return nil, nil, err
	}
	if n, err := countCerts(certPEM); err != nil || n == 0 {
		return nil, nil, bad(EnvTLSCert, f.Cert, err, "holds no PEM certificate")
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, bad(EnvTLSKey, f.Key, err, "is not the PEM private key of "+EnvTLSCert+"="+fmt.Sprintf("%q", f.Cert))
	}
	var pool *x509.CertPool
	if f.CA != "" {
		caPEM, err := read(EnvTLSCA, f.CA)
		if err != nil {
			return nil, nil, err
		}
		n, err := countCerts(caPEM)
		if err != nil || n == 0 {
			return nil, nil, bad(EnvTLSCA, f.CA, err, "holds no PEM certificate")
		}
		pool = x509.NewCertPool()
		pool.AppendCertsFromPEM(caPEM)
	}
	return newMaterial(cert, pool, pool, f.ServerName), stamps, nil
}

// countCerts counts the CERTIFICATE blocks of a PEM file, each of which
// must parse.
func countCerts(b []byte) (int, error) {
	n := 0
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			if len(bytes.TrimSpace(b)) > 0 && n == 0 {
				return 0, fmt.Errorf("not PEM")
			}
			return n, nil
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return n, err
		}
		n++
	}
}

func newMaterial(cert tls.Certificate, roots, clientCAs *x509.CertPool, serverName string) *tlsMaterial {
	if cert.Leaf == nil && len(cert.Certificate) > 0 {
		cert.Leaf, _ = x509.ParseCertificate(cert.Certificate[0])
	}
	m := &tlsMaterial{cert: cert, roots: roots, clientCAs: clientCAs, serverName: serverName}
	m.server = &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		// HTTP/1.1 only: the runner port's limits are per connection and
		// per request as http.Server applies them to HTTP/1.
		NextProtos: []string{"http/1.1"},
		ClientAuth: tls.NoClientCert,
	}
	if clientCAs != nil {
		m.server.ClientAuth, m.server.ClientCAs = tls.RequireAndVerifyClientCert, clientCAs
	}
	m.client = &tls.Config{
		MinVersion: tls.VersionTLS12,
		RootCAs:    roots,
		ServerName: serverName,
		// Always offered when a server asks, whatever CAs it names: a
		// server that refuses it says why in its log, and a cluster moving
		// from TLS to mutual TLS keeps working while its instances restart.
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &m.cert, nil },
	}
	return m
}

// material is the current generation, the files checked for a change at
// most every reloadEvery. A change that does not load leaves the previous
// generation in use, said in log (when not nil) at each check.
func (t *TLS) material(log *slog.Logger) *tlsMaterial {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.files.Cert == "" || time.Since(t.checked) < t.reloadEvery {
		return t.cur
	}
	t.checked = time.Now()
	if !t.changed() {
		return t.cur
	}
	m, stamps, err := t.load()
	if err == nil && t.host != "" && m.clientCAs != nil {
		err = t.verify(m, t.host)
	}
	if err != nil {
		if log != nil {
			log.Warn("runner port TLS: the changed files do not load or do not verify; keeping the certificate loaded before", "err", err)
		}
		return t.cur
	}
	if log != nil {
		log.Info("runner port TLS: files changed, certificate reloaded", "not_after", m.cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	t.cur, t.stamps = m, stamps
	return m
}

// changed reports whether any file differs in size or modification time
// from when it was last loaded (a Kubernetes Secret volume swaps a symlink:
// Stat follows it).
func (t *TLS) changed() bool {
	paths := []string{t.files.Cert, t.files.Key}
	if t.files.CA != "" {
		paths = append(paths, t.files.CA)
	}
	for i, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return true // load says what is wrong
		}
		if i >= len(t.stamps) || st.Size() != t.stamps[i].size || !st.ModTime().Equal(t.stamps[i].mod) {
			return true
		}
	}
	return false
}
