// voltro schedules: the schedules recorded in DB_URL's database and their
// runs; the logic (and its tests) live in internal/schedule.

package main

import (
	"context"
	"io"

	"github.com/voltro/voltro/internal/schedule"
)

// runSchedules is `voltro schedules list|runs NAME [--format json]`.
func runSchedules(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	return schedule.RunCLI(ctx, args, env, stdout, stderr)
}
