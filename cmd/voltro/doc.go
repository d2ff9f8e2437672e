// Command voltro is the CLI: it runs the demo app, benchmarks, and looks at
// and acts on a cluster through its database (DB_URL), from any machine,
// without the application's code.
package main
