package config

import (
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/tlstest"
)

// clustered is the environment of a SQL-backed runner at 10.0.0.7, plus m.
func clustered(m map[string]string) Env {
	base := map[string]string{"DB_URL": "postgres://u@db/app", "VOLTRO_WORKFLOW_RUNNER_HOST": "10.0.0.7", "POD_NAME": "tls-0"}
	for k, v := range m {
		base[k] = v
	}
	return env(base)
}

func TestRunnerTLSSettings(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "cluster CA")
	good := ca.Issue(t, "10.0.0.7").WriteFiles(t, dir, ca)
	other := t.TempDir()
	wrongHost := ca.Issue(t, "10.0.0.8").WriteFiles(t, other, ca)
	serverOnly := ca.IssueWith(t, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, time.Now().Add(time.Hour), "10.0.0.7").WriteFiles(t, t.TempDir(), ca)
	expired := ca.IssueWith(t, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, time.Now().Add(-time.Minute), "10.0.0.7").WriteFiles(t, t.TempDir(), ca)
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")

	for name, tc := range map[string]struct {
		env  map[string]string
		want []string // in the error, all of them
	}{
		"cert without key":          {map[string]string{"VOLTRO_RUNNER_TLS_CERT": good.Cert}, []string{"VOLTRO_RUNNER_TLS_CERT is set but VOLTRO_RUNNER_TLS_KEY is not"}},
		"key without cert":          {map[string]string{"VOLTRO_RUNNER_TLS_KEY": good.Key}, []string{"VOLTRO_RUNNER_TLS_KEY is set but VOLTRO_RUNNER_TLS_CERT is not"}},
		"CA without cert and key":   {map[string]string{"VOLTRO_RUNNER_TLS_CA": good.CA}, []string{"VOLTRO_RUNNER_TLS_CA=", "without VOLTRO_RUNNER_TLS_CERT and VOLTRO_RUNNER_TLS_KEY"}},
		"server name without cert":  {map[string]string{"VOLTRO_RUNNER_TLS_SERVER_NAME": "runner"}, []string{"VOLTRO_RUNNER_TLS_SERVER_NAME=", "without VOLTRO_RUNNER_TLS_CERT"}},
		"unreadable cert":           {map[string]string{"VOLTRO_RUNNER_TLS_CERT": missing, "VOLTRO_RUNNER_TLS_KEY": good.Key}, []string{"VOLTRO_RUNNER_TLS_CERT=", "cannot be read"}},
		"unreadable key":            {map[string]string{"VOLTRO_RUNNER_TLS_CERT": good.Cert, "VOLTRO_RUNNER_TLS_KEY": missing}, []string{"VOLTRO_RUNNER_TLS_KEY=", "cannot be read"}},
		"unreadable CA":             {map[string]string{"VOLTRO_RUNNER_TLS_CERT": good.Cert, "VOLTRO_RUNNER_TLS_KEY": good.Key, "VOLTRO_RUNNER_TLS_CA": missing}, []string{"VOLTRO_RUNNER_TLS_CA=", "cannot be read"}},
		"cert not PEM":              {map[string]string{"VOLTRO_RUNNER_TLS_CERT": garbage, "VOLTRO_RUNNER_TLS_KEY": good.Key}, []string{"VOLTRO_RUNNER_TLS_CERT=", "holds no PEM certificate"}},
		"key not PEM":               {map[string]string{"VOLTRO_RUNNER_TLS_CERT": good.Cert, "VOLTRO_RUNNER_TLS_KEY": garbage}, []string{"VOLTRO_RUNNER_TLS_KEY=", "is not the PEM private key"}},
		"key of another cert":       {map[string]string{"VOLTRO_RUNNER_TLS_CERT": good.Cert, "VOLTRO_RUNNER_TLS_KEY": wrongHost.Key}, []string{"VOLTRO_RUNNER_TLS_KEY=", "is not the PEM private key"}},
		"CA not PEM":                {map[string]string{"VOLTRO_RUNNER_TLS_CERT": good.Cert, "VOLTRO_RUNNER_TLS_KEY": good.Key, "VOLTRO_RUNNER_TLS_CA": garbage}, []string{"VOLTRO_RUNNER_TLS_CA=", "holds no PEM certificate"}},
		"CA of another cluster":     {map[string]string{"VOLTRO_RUNNER_TLS_CERT": good.Cert, "VOLTRO_RUNNER_TLS_KEY": good.Key, "VOLTRO_RUNNER_TLS_CA": writeCA(t, tlstest.NewCA(t, "other"))}, []string{"VOLTRO_RUNNER_TLS_CERT=", "does not verify against VOLTRO_RUNNER_TLS_CA"}},
		"cert for another host":     {map[string]string{"VOLTRO_RUNNER_TLS_CERT": wrongHost.Cert, "VOLTRO_RUNNER_TLS_KEY": wrongHost.Key, "VOLTRO_RUNNER_TLS_CA": wrongHost.CA}, []string{"VOLTRO_RUNNER_TLS_CERT=", `"10.0.0.7"`, "VOLTRO_RUNNER_TLS_SERVER_NAME"}},
		"cert without client use":   {map[string]string{"VOLTRO_RUNNER_TLS_CERT": serverOnly.Cert, "VOLTRO_RUNNER_TLS_KEY": serverOnly.Key, "VOLTRO_RUNNER_TLS_CA": serverOnly.CA}, []string{"VOLTRO_RUNNER_TLS_CERT=", "clientAuth"}},
		"expired cert":              {map[string]string{"VOLTRO_RUNNER_TLS_CERT": expired.Cert, "VOLTRO_RUNNER_TLS_KEY": expired.Key, "VOLTRO_RUNNER_TLS_CA": expired.CA}, []string{"VOLTRO_RUNNER_TLS_CERT=", "expired"}},
		"server name with a port":   {map[string]string{"VOLTRO_RUNNER_TLS_CERT": good.Cert, "VOLTRO_RUNNER_TLS_KEY": good.Key, "VOLTRO_RUNNER_TLS_SERVER_NAME": "runner:34000"}, []string{"VOLTRO_RUNNER_TLS_SERVER_NAME=", "not a host name"}},
		"server name not on a cert": {map[string]string{"VOLTRO_RUNNER_TLS_CERT": good.Cert, "VOLTRO_RUNNER_TLS_KEY": good.Key, "VOLTRO_RUNNER_TLS_CA": good.CA, "VOLTRO_RUNNER_TLS_SERVER_NAME": "runner.voltro"}, []string{"VOLTRO_RUNNER_TLS_CERT=", `"runner.voltro"`}},
	} {
		c, err := FromEnv(clustered(tc.env), "")
		if !errors.Is(err, errs.ErrInvalidConfig) {
			t.Errorf("%s: want invalid_config, got %v (TLS %v)", name, err, c.RunnerTLS)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error does not say %q: %v", name, w, err)
			}
		}
	}

	// None: plain HTTP.
	c, err := FromEnv(clustered(nil), "")
	if err != nil || c.RunnerTLS != nil {
		t.Fatalf("no TLS settings: %v %v", c.RunnerTLS, err)
	}
	// CERT and KEY: TLS, not mutual; the certificate does not verify
	// against the system roots, which is only a warning.
	c, err = FromEnv(clustered(map[string]string{"VOLTRO_RUNNER_TLS_CERT": good.Cert, "VOLTRO_RUNNER_TLS_KEY": good.Key}), "")
	if err != nil || c.RunnerTLS == nil || c.RunnerTLS.Mutual() {
		t.Fatalf("cert and key: %v %v", c.RunnerTLS, err)
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "system roots") || strings.HasPrefix(c.Warnings[0], "voltro ") {
		t.Fatalf("warnings: %q", c.Warnings)
	}
	// All three: mutual TLS, no warning.
	c, err = FromEnv(clustered(map[string]string{"VOLTRO_RUNNER_TLS_CERT": " " + good.Cert + " ", "VOLTRO_RUNNER_TLS_KEY": good.Key, "VOLTRO_RUNNER_TLS_CA": good.CA}), "")
	if err != nil || c.RunnerTLS == nil || !c.RunnerTLS.Mutual() || len(c.Warnings) != 0 {
		t.Fatalf("mutual: %v %v %q", c.RunnerTLS, err, c.Warnings)
	}
	// A server name that every certificate holds, instead of the host.
	shared := ca.Issue(t, "runner.voltro").WriteFiles(t, t.TempDir(), ca)
	c, err = FromEnv(clustered(map[string]string{"VOLTRO_RUNNER_TLS_CERT": shared.Cert, "VOLTRO_RUNNER_TLS_KEY": shared.Key, "VOLTRO_RUNNER_TLS_CA": shared.CA, "VOLTRO_RUNNER_TLS_SERVER_NAME": "runner.voltro"}), "")
	if err != nil || !c.RunnerTLS.Mutual() || c.RunnerTLS.Files().ServerName != "runner.voltro" {
		t.Fatalf("server name: %v %v", c.RunnerTLS, err)
	}
	// No runner port (memory store): loaded, not checked, warned unused.
	c, err = FromEnv(env(map[string]string{"VOLTRO_RUNNER_TLS_CERT": wrongHost.Cert, "VOLTRO_RUNNER_TLS_KEY": wrongHost.Key, "VOLTRO_RUNNER_TLS_CA": wrongHost.CA}), "")
	if err != nil || len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "not used") {
		t.Fatalf("memory store: %v %q", err, c.Warnings)
	}
}

func writeCA(t *testing.T, ca *tlstest.CA) string {
	p := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(p, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
