package sqlwrite

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/voltro/voltro/internal/errs"
	"github.com/voltro/voltro/internal/store"
)

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]*$`)

// CheckIdent rejects names that are not plain SQL identifiers, so table and
// column names can be quoted without escaping surprises.
func CheckIdent(kind, name string) error {
	if !identRE.MatchString(name) || len(name) > 63 {
		return errs.New(errs.CodeInvalidArgument, "%s name %q: want letters, digits, _ or $ (at most 63)", kind, name)
	}
	return nil
}

// Dialect knows how one SQL dialect quotes, numbers placeholders and returns
// written rows.
type Dialect struct {
	Name store.Dialect
}

// Quote quotes an identifier already checked by CheckIdent.
func (d Dialect) Quote(name string) string {
	if d.Name == store.MariaDB || d.Name == store.MySQL {
		return "`" + name + "`"
	}
	return `"` + name + `"`
}

// Arg is the placeholder of the n-th (1-based) argument.
func (d Dialect) Arg(n int) string {
	if d.Name == store.Postgres {
		return "$" + strconv.Itoa(n)
	}
	return "?"
}

// insertReturning reports whether INSERT ... RETURNING works.
func (d Dialect) insertReturning() bool { return d.Name != store.MySQL }

// deleteReturning reports whether DELETE ... RETURNING works.
func (d Dialect) deleteReturning() bool { return d.Name != store.MySQL }

// updateReturning reports whether UPDATE ... RETURNING works (MariaDB 10.11
// has it for INSERT and DELETE only).
func (d Dialect) updateReturning() bool { return d.Name == store.Postgres || d.Name == store.SQLite }

// forUpdate is the row-lock suffix of a read inside a write transaction.
func (d Dialect) forUpdate() string {
	if d.Name == store.SQLite {
		return ""
	}
	return " FOR UPDATE"
}

// where renders "a = $n AND b = $n+1" for cols, numbering from start.
func (d Dialect) where(cols []string, start int) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteString(" AND ")
		}
		b.WriteString(d.Quote(c))
		b.WriteString(" = ")
		b.WriteString(d.Arg(start + i))
	}
	return b.String()
}
