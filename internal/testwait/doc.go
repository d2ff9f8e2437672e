// Package testwait is the one way tests wait for a condition that becomes
// true in the background: poll it until it holds, or fail the test naming
// what did not happen and how long it was given.
package testwait
