// Package inspect holds the wire types of the inspect server: the
// per-instance inspect document, readiness and cluster health, and the
// routes they are served at. The engine builds them; `voltro cluster
// status` (internal/status) and other clients decode them without linking
// the engine.
package inspect
