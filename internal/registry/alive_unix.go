//go:build unix

// Whether a process id names a running process, on Unix.

package registry

import (
	"errors"
	"syscall"
)

// Alive reports whether process pid exists. Signal 0 checks without
// sending anything; EPERM means it exists under another user.
func Alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
