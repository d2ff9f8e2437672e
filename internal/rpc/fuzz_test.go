package rpc

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// FuzzRequestDecoding feeds arbitrary bodies to every request decoder and
// arbitrary header values to the signature check: nothing may panic, a
// decoded volatile request honours the field limits, and no header set
// without the secret verifies.
func FuzzRequestDecoding(f *testing.F) {
	for _, s := range []string{
		`{"shards":["default/1","default/2"]}`,
		`{"requestId":42}`,
		`{"shard":"default/1","entityType":"payments","entityId":"p1","tag":"timer","payload":"eyJhIjoxfQ==","headers":{"traceparent":"00-x"}}`,
		`{"shard":"default/1","body":{"Exec":{"ID":"wf_1"}}}`, `{"runs":[{"runId":"wf_1","body":{"ID":"wf_1"}},{"runId":"wf_2"}]}`,
		`{"shards":null}`, `{"requestId":-1}`, `{"payload":"not base64!"}`, `[`, `null`, ``,
		`{"shard":"` + strings.Repeat("s", 2000) + `","entityType":"t","entityId":"i"}`,
		strings.Repeat(`[`, 10000),
	} {
		f.Add([]byte(s), "1700000000000", "00112233445566778899aabbccddeeff", strings.Repeat("ab", 32), "sig")
	}
	secrets := [][]byte{[]byte("s3cret-0123456789")}
	f.Fuzz(func(t *testing.T, body []byte, ts, nonce, digest, sig string) {
		_, _ = DecodeWake(body)
		_, _ = DecodeReply(body)
		if v, err := DecodeStart(body); err == nil && (v.Shard == "" || len(v.Shard) > maxField || len(v.Body) == 0) {
			t.Fatalf("accepted out of limits: %+v", v)
		}
		if v, err := DecodeRunsEnded(body); err == nil {
			for _, r := range v.Runs {
				if r.RunID == "" || len(r.RunID) > maxField || len(v.Runs) > MaxRunsEnded {
					t.Fatalf("accepted out of limits: %+v", v)
				}
			}
		}
		if v, err := DecodeVolatile(body); err == nil {
			if len(v.Shard) > maxField || len(v.EntityID) > maxField || len(v.EntityType) > maxField || len(v.Tag) > maxField || v.EntityID == "" || len(v.Headers) > maxHeaders {
				t.Fatalf("accepted out of limits: %+v", v)
			}
		}
		r := httptest.NewRequest(http.MethodPost, PathVolatile, nil)
		for k, v := range map[string]string{headerTime: ts, headerNonce: nonce, headerDigest: digest, headerSig: sig, headerTo: "127.0.0.1:1"} {
			if strings.ContainsAny(v, "\r\n") {
				return
			}
			r.Header.Set(k, v)
		}
		if _, reason := verifyHeaders(secrets, "127.0.0.1:1", r, time.UnixMilli(1700000000000)); reason == "" {
			t.Fatalf("headers without the secret verified: %v", r.Header)
		}
	})
}
