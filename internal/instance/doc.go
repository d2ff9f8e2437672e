// Package instance assembles one voltro instance: New builds every part
// at once (the engine, the workflow runtime, the change feed, the
// dashboard, the replica-id watch, the scheduler) from one ordered list;
// Start starts them in that order, Stop stops them in reverse, each
// through the one lifecycle of package service, and their errors are
// returned. Nothing is attached later. voltro.App is the public face of an
// Instance; voltrotest reaches the same New with its store and clock.
package instance
