// Package dashboard is the cluster's web view: the Cluster, Workflows,
// Schedules, Messages and Logs panels an instance serves at /_voltro/ui/ on
// its inspect server and `voltro dashboard` serves from any machine with
// DB_URL. It reads through the store contract and the instances' inspect
// endpoints (as `voltro cluster status` does), pushes changes to the page
// over server-sent events fed by the change feed (a cheap poll where the
// feed cannot see other writers, and nothing at all while no page is
// open), and runs the admin actions only for a request that carries
// VOLTRO_ADMIN_TOKEN in its Authorization header. Its HTML, CSS and
// JavaScript are embedded: the binary alone serves it, offline.
package dashboard
