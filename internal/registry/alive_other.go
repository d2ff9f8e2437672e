//go:build !unix

// Whether a process id names a running process, where signal 0 is not
// available.

package registry

import "os"

// Alive reports whether process pid exists, as far as the platform tells.
func Alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}
