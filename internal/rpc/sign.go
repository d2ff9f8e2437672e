// Package rpc is runner-to-runner traffic over HTTP on the advertised runner
// address: wake-ups, volatile messages, reply pushes and pings. Every call is
// signed with the cluster secret (HMAC-SHA256 over method, path, timestamp
// and body); unsigned, wrongly signed or stale calls are refused and logged.
package rpc

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"time"
)

const (
	headerSig  = "X-Voltro-Signature"
	headerTime = "X-Voltro-Timestamp"
	headerFrom = "X-Voltro-From"
	maxSkew    = 2 * time.Minute
)

func sign(secret []byte, method, path string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(method))
	m.Write([]byte{0})
	m.Write([]byte(path))
	m.Write([]byte{0})
	m.Write([]byte(strconv.FormatInt(ts, 10)))
	m.Write([]byte{0})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// verify checks a request's signature; it returns a reason when refused.
func verify(secret []byte, r *http.Request, body []byte, now time.Time) (ok bool, reason string) {
	sig := r.Header.Get(headerSig)
	if sig == "" {
		return false, "no signature"
	}
	ts, err := strconv.ParseInt(r.Header.Get(headerTime), 10, 64)
	if err != nil {
		return false, "no timestamp"
	}
	if d := now.Sub(time.UnixMilli(ts)); d > maxSkew || d < -maxSkew {
		return false, "timestamp outside the allowed window"
	}
	want := sign(secret, r.Method, r.URL.Path, ts, body)
	if !hmac.Equal([]byte(sig), []byte(want)) {
		return false, "bad signature"
	}
	return true, ""
}
