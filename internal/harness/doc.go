// Package harness is the seam through which the test environment
// (voltrotest) builds an App on a store and clock of its choosing and
// reaches the parts it drives: the engine and the workflow runtime. It
// travels in the context given to voltro.New, so the public API shows no
// internal type and nothing is global.
package harness
