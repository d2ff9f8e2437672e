// Package tlstest makes certificate authorities and runner certificates for
// tests of the runner port's TLS: generated with crypto/x509 in the test,
// nothing read from disk but what the test writes.
package tlstest
