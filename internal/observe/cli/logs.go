package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/inspectclient"
	"github.com/voltro/voltro/internal/observe"
	"github.com/voltro/voltro/internal/observe/serve"
	"github.com/voltro/voltro/internal/registry"
	"github.com/voltro/voltro/internal/store"
)

// LogsOptions say where to look and what to print.
type LogsOptions struct {
	// Store is the store of DB_URL, nil when DB_URL is not set (then only
	// the local registry directory is read, for every database).
	Store store.Driver
	// Dialect and Database name DB_URL's database (config.Config.DB).
	Dialect  string
	Database string
	// RegistryDir is the local registry directory (registry.Dir); "" skips it.
	RegistryDir string
	// Process keeps only instances of this process name or replica id.
	Process string
	// Tail is how many records to print in all (each instance is asked for
	// as many); 0 prints everything the instances keep.
	Tail int
	// Boot prints each instance's boot records (kept apart from the ring)
	// before the Tail records, which then count only the others.
	Boot bool
	// Level is the lowest level printed: debug (default), info, warn, error.
	Level string
	// Format is text (default) or json (one record per line).
	Format string
	// Colour marks levels with terminal colours (text only).
	Colour bool
	// InspectToken is sent as a bearer token (VOLTRO_INSPECT_TOKEN) to the
	// inspect addresses InspectTrust allows; the others are asked without
	// it, and stderr says so.
	InspectToken string
	// InspectTrust: the zero value trusts loopback only
	// (config.Config.InspectTrust, VOLTRO_INSPECT_TRUSTED_HOSTS).
	InspectTrust inspectclient.Trust
	// HTTP asks the instances; nil uses a client with a 5 s timeout.
	HTTP *http.Client
}

// Target is one instance to ask.
type Target struct {
	ReplicaID     string
	Process       string
	RunnerAddress string // "" when the source does not say
	InspectAddr   string
}

// Discover lists the instances of o's database: the runners table on a
// shared SQL store, the local registry directory otherwise (and for
// instances the table cannot show), filtered by o.Process.
func Discover(ctx context.Context, o LogsOptions) ([]Target, error) {
	var local []registry.Listed
	if o.RegistryDir != "" {
		var err error
		if local, err = registry.List(o.RegistryDir); err != nil {
			return nil, fmt.Errorf("reading the registry directory: %w", err)
		}
	}
	database := registry.DatabaseKey(o.Dialect, o.Database)
	var found []registry.Instance
	var rows []store.Runner
	if o.Store != nil {
		var err error
		if rows, err = o.Store.ListRunners(ctx); err != nil {
			return nil, fmt.Errorf("reading the runners table: %w", err)
		}
	}
	switch {
	case store.Dialect(o.Dialect).Shared() && o.Store != nil:
		found = registry.FromRunners(rows, o.Dialect, database, local)
	default:
		dialect := o.Dialect
		if o.Store == nil {
			dialect = "" // no DB_URL: every local instance
		}
		found = registry.FromEntries(local, dialect, database, rows)
	}
	var out []Target
	seen := map[Target]bool{}
	for _, in := range found {
		if o.Process != "" && in.Process != o.Process && in.ReplicaID != o.Process {
			continue
		}
		if in.Stale || in.InspectAddr == "" {
			continue
		}
		// Two rows may name one inspect address (a dead instance's row and
		// the instance that reused its VOLTRO_INSPECT_ADDR): each is asked,
		// and only the one the answer names gets the records.
		t := Target{ReplicaID: in.ReplicaID, Process: in.Process, RunnerAddress: in.RunnerAddress, InspectAddr: dialAddr(in.InspectAddr, in.RunnerAddress)}
		if seen[t] {
			continue
		}
		seen[t] = true
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b Target) int {
		return cmp.Or(strings.Compare(a.Process, b.Process), strings.Compare(a.ReplicaID, b.ReplicaID))
	})
	return out, nil
}

// dialAddr turns a listening address into one to dial: a wildcard host
// becomes the runner's host (or loopback).
func dialAddr(inspect, runner string) string {
	host, port, err := net.SplitHostPort(inspect)
	if err != nil {
		return inspect
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return inspect
	}
	if rh, _, err := net.SplitHostPort(runner); err == nil && rh != "" && !strings.HasPrefix(runner, "local:") {
		return net.JoinHostPort(rh, port)
	}
	return net.JoinHostPort("127.0.0.1", port)
}

// Logs prints the merged recent log records of every instance found. An
// instance that cannot be asked is reported on stderr; asking none
// successfully is an error.
func Logs(ctx context.Context, o LogsOptions, stdout, stderr io.Writer) error {
	level := slog.LevelDebug
	if o.Level != "" {
		if err := level.UnmarshalText([]byte(o.Level)); err != nil {
			return errs.New(errs.CodeInvalidArgument, "--level %q: use debug, info, warn or error", o.Level)
		}
	}
	if o.Format == "" {
		o.Format = "text"
	}
	if o.Format != "text" && o.Format != "json" {
		return errs.New(errs.CodeInvalidArgument, "--format %q: use text or json", o.Format)
	}
	if o.HTTP == nil {
		o.HTTP = &http.Client{Timeout: 5 * time.Second}
	}
	targets, err := Discover(ctx, o)
	if err != nil {
		return err
	}
	if len(targets) == 0 {
		what := "no running instance was found"
		if o.Process != "" {
			what += " for process " + strconv.Quote(o.Process)
		}
		return errs.New(errs.CodeNotFound, "%s (instances publish their inspect address in the runners table, or in the registry directory for single-process stores)", what)
	}
	client := inspectclient.New(o.HTTP, o.InspectToken, o.InspectTrust)
	lists := make([][]observe.Record, len(targets))
	withheld := make([]string, len(targets))
	fails := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lists[i], withheld[i], fails[i] = fetchLogs(ctx, client, t, o.Tail, o.Boot, level)
		}()
	}
	wg.Wait()
	asked := 0
	for i, err := range fails {
		t := targets[i]
		if err != nil {
			fmt.Fprintf(stderr, "voltro logs: %s (%s) at %s: %v\n", t.ReplicaID, t.Process, t.InspectAddr, err)
		}
		if withheld[i] != "" {
			fmt.Fprintf(stderr, "voltro logs: %s (%s) at %s: token withheld: %s\n", t.ReplicaID, t.Process, t.InspectAddr, withheld[i])
		}
		if err == nil {
			asked++
		}
	}
	if asked == 0 {
		return errs.New(errs.CodeUnavailable, "none of the %d instance(s) found answered", len(targets))
	}
	recs := observe.MergeTail(o.Tail, lists...)
	if o.Boot {
		recs = observe.Merge(o.Tail, lists...)
	}
	if o.Format == "json" {
		enc := json.NewEncoder(stdout)
		for _, r := range recs {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	width := 0
	for _, r := range recs {
		width = max(width, len(r.Replica))
	}
	for _, r := range recs {
		fmt.Fprintln(stdout, FormatRecord(r, width, o.Colour))
	}
	return nil
}

// fetchLogs asks one instance for its ring; withheld says why the inspect
// token was not sent (t's host is not trusted). An answer from another
// instance than t (another replica id or runner address: it took over t's
// inspect address) is refused, so its records are never shown as t's.
func fetchLogs(ctx context.Context, c *inspectclient.Client, t Target, tail int, boot bool, level slog.Level) (recs []observe.Record, withheld string, err error) {
	q := url.Values{"tail": {strconv.Itoa(tail)}, "level": {strings.ToLower(level.String())}, "boot": {strconv.FormatBool(boot)}}
	resp, withheld, err := c.Get(ctx, t.InspectAddr, serve.PathLogs+"?"+q.Encode())
	if err != nil {
		return nil, withheld, fmt.Errorf("unreachable: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, withheld, fmt.Errorf("reading the answer: %w", err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized:
		if withheld != "" {
			return nil, withheld, fmt.Errorf("refused (401): the instance wants the inspect token, which was withheld from this host")
		}
		return nil, withheld, fmt.Errorf("refused (401): set VOLTRO_INSPECT_TOKEN to the instance's inspect token")
	case http.StatusNotFound:
		return nil, withheld, fmt.Errorf("no log endpoint (404): the instance runs a voltro without one")
	default:
		return nil, withheld, fmt.Errorf("answered %s: %s", resp.Status, firstLine(string(body)))
	}
	if err := json.Unmarshal(body, &recs); err != nil {
		return nil, withheld, fmt.Errorf("unreadable answer: %w", err)
	}
	replica, runner := resp.Header.Get(serve.HeaderReplica), resp.Header.Get(serve.HeaderRunner)
	if replica == "" { // an instance that does not name itself: its records do
		for _, r := range recs {
			if r.Replica != "" && r.Replica != t.ReplicaID {
				replica = r.Replica
				break
			}
		}
	}
	if (replica != "" && replica != t.ReplicaID) || (runner != "" && t.RunnerAddress != "" && runner != t.RunnerAddress) {
		return nil, withheld, fmt.Errorf("%w: the address is answered by replica %s with runner %s (it reused this instance's inspect address); its records are not this instance's", ErrOtherInstance, replica, orDash(runner))
	}
	return recs, withheld, nil
}

// ErrOtherInstance: another instance answered at a target's inspect address.
var ErrOtherInstance = errors.New("not this instance")

// FormatRecord renders one record as a text line: time (UTC), level,
// replica, message, then the attributes sorted by key, leaving out those the
// line already says: key=value in the message, the replica in its column.
func FormatRecord(r observe.Record, replicaWidth int, colour bool) string {
	var b strings.Builder
	b.WriteString(r.Time.UTC().Format("2006-01-02T15:04:05.000Z"))
	b.WriteByte(' ')
	lvl := fmt.Sprintf("%-5s", escapeControl(r.Level))
	if colour {
		switch l := observe.LevelOf(r.Level); {
		case l >= slog.LevelError:
			lvl = "\x1b[31m" + lvl + "\x1b[0m"
		case l >= slog.LevelWarn:
			lvl = "\x1b[33m" + lvl + "\x1b[0m"
		case l < slog.LevelInfo:
			lvl = "\x1b[2m" + lvl + "\x1b[0m"
		}
	}
	b.WriteString(lvl)
	// Records come from any process answering an inspect address, and their
	// text from whoever sent a request: no control character (terminal
	// escapes, carriage returns, bidi overrides) reaches the terminal raw.
	fmt.Fprintf(&b, " %-*s %s", replicaWidth, escapeControl(r.Replica), escapeControl(r.Msg))
	keys := make([]string, 0, len(r.Attrs))
	for k := range r.Attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := attrText(r.Attrs[k])
		if saysAlready(r.Msg, k, v) {
			continue // the message reads "dialect=postgres" already
		}
		if (k == "replica" || k == "replicaId") && v == r.Replica {
			continue // the replica column says it
		}
		fmt.Fprintf(&b, " %s=%s", escapeControl(k), v)
	}
	return b.String()
}

// escapeControl writes each control or invisible formatting character of s
// (C0, DEL, C1, bidi overrides, …) as a Go escape (\x1b, \u202e).
func escapeControl(s string) string {
	if !hasControl(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isControl(r) {
			q := strconv.QuoteRune(r) // '\x1b'
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isControl(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}

func hasControl(s string) bool { return strings.IndexFunc(s, isControl) >= 0 }

// saysAlready reports whether msg contains key=value as a word of its own
// (value as attrText prints it, or unquoted), so the attribute would only
// repeat it.
func saysAlready(msg, key, value string) bool {
	forms := []string{value}
	if u, err := strconv.Unquote(value); err == nil && u != "" {
		forms = append(forms, u)
	}
	for _, v := range forms {
		kv := key + "=" + v
		for from := 0; ; {
			i := strings.Index(msg[from:], kv)
			if i < 0 {
				break
			}
			i += from
			end := i + len(kv)
			before := i == 0 || !wordByte(msg[i-1])
			after := end == len(msg) || strings.IndexByte(" ,;)]", msg[end]) >= 0
			if before && after {
				return true
			}
			from = i + 1
		}
	}
	return false
}

func wordByte(c byte) bool {
	return c == '_' || c == '.' || c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func attrText(v any) string {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case nil:
		return "<nil>"
	default:
		if b, err := json.Marshal(x); err == nil {
			s = string(b)
		} else {
			s = fmt.Sprint(x)
		}
	}
	if s == "" || strings.ContainsAny(s, " \t\n\"=") || hasControl(s) {
		return strconv.Quote(s)
	}
	return s
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
