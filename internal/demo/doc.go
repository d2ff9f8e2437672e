// Package demo is what `voltro demo` runs: example entity types, workflows
// and schedules that show the cluster at work.
package demo
