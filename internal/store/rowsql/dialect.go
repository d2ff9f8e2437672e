// What one database's SQL looks like to the row writes, and the registry
// the store packages fill.

package rowsql

import (
	"database/sql"
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

// Dialect knows how one SQL database quotes, numbers placeholders, returns
// written rows and finds a primary key. The store packages define theirs.
type Dialect struct {
	Name store.Dialect
	// QuoteChar encloses identifiers: ` or ".
	QuoteChar string
	// Numbered placeholders are $1, $2, …; otherwise ?.
	Numbered bool
	// which writes take RETURNING *
	InsertReturning, UpdateReturning, DeleteReturning bool
	// ForUpdate is the row-lock suffix of a read inside a write transaction.
	ForUpdate string
	// PrimaryKeyQuery lists the primary-key columns in key order of the
	// table named by its one argument; QuotedTableArg passes the name
	// quoted (a regclass), else bare.
	PrimaryKeyQuery string
	QuotedTableArg  bool
	// SerialTable is the CREATE TABLE of a bench table (%s its name): an
	// auto-generated integer key id, integer sent_ns, short text payload.
	SerialTable string
	// Pool opens the application pool on dsn (dburl's driver DSN) for a
	// feed that was given none.
	Pool func(dsn string) (*sql.DB, error)
}

// Returning says which writes read their rows back with RETURNING and
// which need a SELECT after them, as the boot line reports it: PostgreSQL
// and SQLite "native (INSERT/UPDATE/DELETE)", MariaDB "native
// (INSERT/DELETE); UPDATE then SELECT", MySQL "none; each write then
// SELECT".
func (d Dialect) Returning() string {
	var native, not []string
	for _, w := range []struct {
		name string
		ok   bool
	}{{"INSERT", d.InsertReturning}, {"UPDATE", d.UpdateReturning}, {"DELETE", d.DeleteReturning}} {
		if w.ok {
			native = append(native, w.name)
		} else {
			not = append(not, w.name)
		}
	}
	switch {
	case len(not) == 0:
		return "native (" + strings.Join(native, "/") + ")"
	case len(native) == 0:
		return "none; each write then SELECT"
	}
	return "native (" + strings.Join(native, "/") + "); " + strings.Join(not, "/") + " then SELECT"
}

// Quote quotes an identifier already checked by CheckIdent.
func (d Dialect) Quote(name string) string { return d.QuoteChar + name + d.QuoteChar }

// Arg is the placeholder of the n-th (1-based) argument.
func (d Dialect) Arg(n int) string {
	if d.Numbered {
		return "$" + strconv.Itoa(n)
	}
	return "?"
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
