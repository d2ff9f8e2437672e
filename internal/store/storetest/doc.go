// Package storetest is the conformance suite every store.Driver must pass.
// Each driver's own test calls Run with a factory that returns an empty,
// migrated store.
package storetest
