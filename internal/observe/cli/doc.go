// Package cli implements `voltro logs` and `voltro traces`: the first asks
// every instance of a database for its recent log records and prints them
// merged by time; the second prints one workflow execution's timeline
// across instances from the introspection tables.
package cli
