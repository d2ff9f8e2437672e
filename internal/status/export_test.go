package status

// Unexported names the external tests (package status_test) use: those
// tests start apps through the root package, which links the dashboard, which
// links this package, so they cannot be in package status.

const (
	AnsiRed    = ansiRed
	AnsiYellow = ansiYellow
	AnsiReset  = ansiReset
)

var (
	Row          = row
	RetentionFor = retentionInForce
)
