// Package status builds what `voltro cluster status` shows: one row per
// running instance (found through the runtime registry, then asked over its
// inspect endpoint) and a footer of shared state read from the database. The
// Report is both the table's model and the documented JSON shape
// (docs/cluster-status.schema.json); keep the two in step.
package status
