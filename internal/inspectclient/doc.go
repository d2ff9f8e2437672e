// Package inspectclient is the client side of the inspect server: the one
// place that decides whether the inspect token (VOLTRO_INSPECT_TOKEN) may be
// sent to an address, and the one place that sends it. Addresses come from
// the runners table and the local registry directory, which any database
// user or local writer can fill in; the token goes only to hosts the
// operator trusts: loopback, and what VOLTRO_INSPECT_TRUSTED_HOSTS adds.
package inspectclient
