// Column-equality filters for subscriptions, matched against a delta's row,
// old row or key by the text form of each value, so a filter written as text
// (CLI flag, query string) matches the typed values every transport produces.

package delta

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/voltro/voltro/internal/errs"
)

// Filter keeps the deltas whose row has every listed column equal to the
// given text. An empty filter keeps everything.
type Filter map[string]string

// ParseFilter reads COL=VALUE terms (CLI --where flags, SSE where= params).
func ParseFilter(terms []string) (Filter, error) {
	f := Filter{}
	for _, t := range terms {
		col, val, ok := strings.Cut(t, "=")
		col = strings.TrimSpace(col)
		if !ok || col == "" {
			return nil, errs.New(errs.CodeInvalidArgument, "filter %q: want COL=VALUE", t)
		}
		f[col] = val
	}
	return f, nil
}

// String renders the filter as sorted COL=VALUE terms.
func (f Filter) String() string {
	terms := make([]string, 0, len(f))
	for c, v := range f {
		terms = append(terms, c+"="+v)
	}
	sort.Strings(terms)
	return strings.Join(terms, " AND ")
}

// Match reports whether d passes f. A resync always passes. An update passes
// when its new or its old row matches, so a row leaving the filtered set is
// seen. When a delta carries only its key (an oversized delete), a filter on
// non-key columns passes it: the promise is at-least-once.
func (f Filter) Match(d Delta) bool {
	if len(f) == 0 || d.Op == Resync {
		return true
	}
	if d.Row != nil && f.matchRow(d.Row) {
		return true
	}
	if d.Old != nil && f.matchRow(d.Old) {
		return true
	}
	if d.Row == nil && d.Old == nil {
		for c, want := range f {
			v, ok := d.Key[c]
			if ok && Text(v) != want {
				return false
			}
		}
		return true
	}
	return false
}

func (f Filter) matchRow(r Row) bool {
	for c, want := range f {
		v, ok := r[c]
		if !ok || Text(v) != want {
			return false
		}
	}
	return true
}

// Text is the canonical text form of a column value used for filters.
func Text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []byte:
		return string(x)
	case bool:
		if x {
			return "true"
		}
		return "false"
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case json.Number:
		return x.String()
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprint(Normalize(v))
}
