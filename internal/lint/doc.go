// Package lint holds the repository's own source checks, run as ordinary
// tests: every package has a doc.go that carries its package comment, and
// no other file's comment is attached to its package clause (so go doc shows
// the package's purpose, not a file comment). It has no code of its own.
package lint
