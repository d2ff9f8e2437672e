package cdcpub

import "github.com/voltro/voltro/internal/cdc"

// Wrap returns the *changes.Feed that delegates to f. Package changes sets
// it when it is initialised, so it is set in every program that can name
// changes.Feed.
var Wrap func(f *cdc.Feed) any
