// Writing, listing and pruning the entries of a registry directory.

package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/voltro/voltro/internal/errs"
)

// Listed is an entry as found on disk.
type Listed struct {
	Entry
	Path string
	// Stale: the process that wrote the entry is gone (it died without
	// reaching Close), or the file cannot be read.
	Stale       bool
	StaleReason string
}

// FileName is the entry's file name, <replica>-<pid>.json, with characters
// that do not belong in a file name replaced.
func FileName(e Entry) string {
	safe := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, e.ReplicaID)
	return fmt.Sprintf("%s-%d.json", safe, e.PID)
}

// Write stores e in dir (created 0700 if missing) atomically and returns
// the file's path.
func Write(dir string, e Entry) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", errs.Wrap(errs.CodeUnavailable, err, "registry: create "+dir)
	}
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return "", fmt.Errorf("registry: encode entry: %w", err)
	}
	path := filepath.Join(dir, FileName(e))
	tmp, err := os.CreateTemp(dir, ".entry-*")
	if err != nil {
		return "", errs.Wrap(errs.CodeUnavailable, err, "registry: write "+path)
	}
	_, werr := tmp.Write(append(b, '\n'))
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp.Name(), 0o600)); err != nil {
		_ = os.Remove(tmp.Name())
		return "", errs.Wrap(errs.CodeUnavailable, err, "registry: write "+path)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return "", errs.Wrap(errs.CodeUnavailable, err, "registry: write "+path)
	}
	return path, nil
}

// Remove deletes an entry's file; a file already gone is not an error.
func Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errs.Wrap(errs.CodeUnavailable, err, "registry: remove "+path)
	}
	return nil
}

// List reads every entry of dir, ordered by file name, judging each one's
// process alive or stale. A missing directory lists nothing.
func List(dir string) ([]Listed, error) {
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errs.Wrap(errs.CodeUnavailable, err, "registry: read "+dir)
	}
	var out []Listed
	for _, de := range des {
		if de.IsDir() || !strings.HasSuffix(de.Name(), ".json") || strings.HasPrefix(de.Name(), ".") {
			continue
		}
		l := Listed{Path: filepath.Join(dir, de.Name())}
		b, err := os.ReadFile(l.Path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile: its instance closed
		}
		switch {
		case err != nil:
			l.Stale, l.StaleReason = true, "unreadable: "+err.Error()
		case json.Unmarshal(b, &l.Entry) != nil:
			l.Stale, l.StaleReason = true, "not a registry entry"
		case l.PID <= 0:
			l.Stale, l.StaleReason = true, "entry names no process id"
		case !Alive(l.PID):
			l.Stale, l.StaleReason = true, fmt.Sprintf("process %d is gone (it stopped without closing)", l.PID)
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// Prune removes the files of the stale entries among ls and returns how
// many it removed.
func Prune(ls []Listed) (int, error) {
	n := 0
	var errList []error
	for _, l := range ls {
		if !l.Stale {
			continue
		}
		if err := Remove(l.Path); err != nil {
			errList = append(errList, err)
			continue
		}
		n++
	}
	return n, errors.Join(errList...)
}
