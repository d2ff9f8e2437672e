// Package rpc is runner-to-runner traffic over HTTP on the advertised runner
// address: wake-ups, volatile messages, reply pushes, workflow starts
// routed to their shard's holder (and the push of their end), and pings.
//
// Every call is signed with the cluster secret: HMAC-SHA256 over the
// method, the path, a SHA-256 digest of the body, a timestamp, a random
// nonce, the sender's and the target runner's addresses, all sent in
// headers. The server checks the headers before it reads a byte of the body
// (an unsigned or oversized call costs a header read), refuses a timestamp
// outside ±MaxSkew, a nonce it has seen within that window, a call aimed at
// another address, and a body that does not match the signed digest. A call
// signed before the server started is refused too: the nonce cache lives in
// memory, and this is what keeps a call captured before a restart from
// being replayed after it.
//
// With VOLTRO_RUNNER_TLS_CERT and _KEY the port serves TLS, mutual with
// VOLTRO_RUNNER_TLS_CA (tls.go, tlsserve.go); the signature is checked
// under TLS as well.
//
// Rotation: the secret setting may hold several comma-separated secrets;
// calls are signed with the first and accepted under any of them.
package rpc
