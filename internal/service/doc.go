// Package service is the one lifecycle of an instance's parts, after
// River's startstop: Start with a context and return once the part runs,
// Stop to end it and wait until it has, each returning its error. A part
// runs until it is stopped: the start context bounds the start and lends
// its values, its cancellation does not end the run (an App started under
// a request's context keeps running after the request). A Sequence starts
// parts in order and stops the ones it started in reverse; a Group stops
// its parts at once.
package service
