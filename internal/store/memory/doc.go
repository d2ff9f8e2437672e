// Package memory is the in-process store: the dev default, and the reference
// implementation of the store contract. Several engines in one process may
// share one Store, which is how the core is tested under the race detector.
package memory
