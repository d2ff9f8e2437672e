// Package service is the one lifecycle of an instance's background
// services, after River's startstop: Start with a context, Stop cancels and
// waits until the service has returned. A service runs until it is
// stopped: the start context bounds the start and lends its values, its
// cancellation does not end the run (an App started under a request's
// context keeps running after the request).
package service
