// Package golden compares test output with a file under testdata/, and
// rewrites the file when the test binary runs with -update. Test support
// only: import it from _test.go files.
package golden
