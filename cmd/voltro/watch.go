// `voltro watch TABLE [--where COL=VALUE]... [--format json]`: print the
// changes of a table as they commit, through the dialect's change feed.

package main

import (
	"context"
	"io"

	"github.com/voltro/voltro/internal/cdc"
)

// runWatch is the watch command; the work is in internal/cdc.
func runWatch(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	return cdc.RunWatch(ctx, args, env, stdout, stderr)
}
