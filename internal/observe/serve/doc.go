// Package serve adds the observability routes to an instance's inspect
// server: its recent log records, its Prometheus metrics, and the two admin
// actions (cancel a workflow, replay a dead letter) that need
// VOLTRO_ADMIN_TOKEN. The read routes share the engine's read-only and
// inspect-token check; the admin routes take POST only, with their own token.
package serve
