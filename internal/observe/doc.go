// Package observe is what an instance tells about itself: a bounded ring of
// its recent log records (served on the inspect server and merged across
// instances by `voltro logs`), OpenTelemetry spans for workflow runs, steps,
// message deliveries and schedule firings with W3C trace context carried in
// start contexts and message headers, and the Prometheus instruments fed by
// the engine. Nothing here is global: each App owns its ring, its registry
// and the TracerProvider it was given.
package observe
