package rpc

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"
)

const (
	headerSig    = "X-Voltro-Signature"
	headerTime   = "X-Voltro-Timestamp"
	headerFrom   = "X-Voltro-From"
	headerTo     = "X-Voltro-To"
	headerNonce  = "X-Voltro-Nonce"
	headerDigest = "X-Voltro-Body-Digest"
	// MaxSkew is how far a call's timestamp may be from the server's clock;
	// nonces are remembered for this long on either side.
	MaxSkew = 30 * time.Second
	// signVersion separates this signature scheme from any other use of
	// the secret.
	signVersion = "voltro-rpc-v2"
)

// ParseSecrets splits a VOLTRO_CLUSTER_SECRET value: comma-separated
// secrets, the first signs, all verify. Empty entries are dropped.
func ParseSecrets(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// signed is what a signature covers.
type signed struct {
	method, path string
	ts           int64
	nonce        string
	from, to     string
	digest       string // hex SHA-256 of the body
}

func (p signed) sign(secret []byte) string {
	m := hmac.New(sha256.New, secret)
	for _, f := range []string{signVersion, p.method, p.path, strconv.FormatInt(p.ts, 10), p.nonce, p.from, p.to, p.digest} {
		m.Write([]byte(strconv.Itoa(len(f))))
		m.Write([]byte{':'})
		m.Write([]byte(f))
	}
	return hex.EncodeToString(m.Sum(nil))
}

func bodyDigest(body []byte) string {
	d := sha256.Sum256(body)
	return hex.EncodeToString(d[:])
}

func newNonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// setHeaders signs a request to target carrying body.
func setHeaders(h http.Header, secret []byte, method, path, from, to string, body []byte, now time.Time) {
	p := signed{method: method, path: path, ts: now.UnixMilli(), nonce: newNonce(), from: from, to: to, digest: bodyDigest(body)}
	h.Set(headerTime, strconv.FormatInt(p.ts, 10))
	h.Set(headerNonce, p.nonce)
	h.Set(headerFrom, p.from)
	h.Set(headerTo, p.to)
	h.Set(headerDigest, p.digest)
	h.Set(headerSig, p.sign(secret))
}

// verifyHeaders checks everything but the body (whose digest it returns,
// to be compared once the body is read) and the nonce cache. It returns a
// reason when refused.
func verifyHeaders(secrets [][]byte, self string, r *http.Request, now time.Time) (p signed, reason string) {
	sig := r.Header.Get(headerSig)
	if sig == "" {
		return p, "no signature"
	}
	ts, err := strconv.ParseInt(r.Header.Get(headerTime), 10, 64)
	if err != nil {
		return p, "no timestamp"
	}
	if d := now.Sub(time.UnixMilli(ts)); d > MaxSkew || d < -MaxSkew {
		return p, "timestamp outside the allowed window"
	}
	p = signed{method: r.Method, path: r.URL.Path, ts: ts, nonce: r.Header.Get(headerNonce),
		from: r.Header.Get(headerFrom), to: r.Header.Get(headerTo), digest: r.Header.Get(headerDigest)}
	if len(p.nonce) < 16 || len(p.nonce) > 64 {
		return p, "no nonce"
	}
	if len(p.digest) != 2*sha256.Size {
		return p, "no body digest"
	}
	ok := false
	for _, s := range secrets {
		if hmac.Equal([]byte(sig), []byte(p.sign(s))) {
			ok = true
		}
	}
	if !ok {
		return p, "bad signature"
	}
	if p.to != self {
		return p, "call addressed to " + strconvQuote(p.to) + ", not to this runner"
	}
	return p, ""
}

func strconvQuote(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return strconv.Quote(s)
}
