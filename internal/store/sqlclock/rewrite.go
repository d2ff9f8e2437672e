// The statement rewriters: server-clock reads become test-clock literals,
// and every other read of the server's clock is made to fail.

package sqlclock

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Dialect selects the SQL the rewriter knows.
type Dialect int

const (
	// Postgres rewrites now() and forbids the other clock functions.
	Postgres Dialect = iota + 1
	// MySQL rewrites UTC_TIMESTAMP(n), NOW(n) and CURRENT_TIMESTAMP(n) (the
	// store's sessions run at time_zone '+00:00', so all three are UTC) and
	// forbids the other clock functions.
	MySQL
)

// Forbidden is the prefix of the function a server-clock read the rewriter
// cannot serve is renamed to: the database answers that it does not exist.
const Forbidden = "voltro_test_clock_forbids_"

var (
	pgDefault = regexp.MustCompile(`(?i)\bdefault\s+now\s*\(\s*\)`)
	pgNow     = regexp.MustCompile(`(?i)(^|[^\w.$"])now\s*\(\s*\)`)
	pgCalls   = regexp.MustCompile(`(?i)(\bclock_timestamp|\bstatement_timestamp|\btransaction_timestamp|\btimeofday|\bpg_catalog\s*\.\s*now)\s*\(`)
	pgWords   = regexp.MustCompile(`(?i)\b(current_timestamp|localtimestamp|current_time|localtime|current_date)\b`)

	myDefault = regexp.MustCompile(`(?i)\s+default\s+(current_timestamp|now|localtimestamp|localtime)\b(\s*\(\s*\d?\s*\))?`)
	myNow     = regexp.MustCompile(`(?i)(^|[^\w.$` + "`" + `])(utc_timestamp|now|current_timestamp|localtimestamp|localtime)\s*\(\s*(\d?)\s*\)`)
	myCalls   = regexp.MustCompile(`(?i)\b(sysdate|curdate|curtime|utc_date|utc_time|current_date|current_time|utc_timestamp|now)\s*\(`)
	myNoArgs  = regexp.MustCompile(`(?i)\bunix_timestamp\s*\(\s*\)`)
	myWords   = regexp.MustCompile(`(?i)\b(current_timestamp|localtimestamp|localtime|current_date|current_time)\b`)
)

// pgDefaultGap is what a clock DEFAULT becomes under a test clock: reading a
// setting that is never set fails the insert that leaves the column out, and
// names why.
const pgDefaultGap = `DEFAULT CAST(current_setting('` + "voltro.test_clock_forbids_server_clock_default" + `') AS timestamptz)`

// Rewrite returns query with the server's clock replaced by now, for d.
func Rewrite(d Dialect, query string, now time.Time) string {
	switch d {
	case Postgres:
		return rewritePostgres(query, now)
	case MySQL:
		return rewriteMySQL(query, now)
	}
	return query
}

func rewritePostgres(q string, now time.Time) string {
	// Values travel as parameters; only literals the store writes itself
	// sit in the text. Dollar-quoted bodies are code (a trigger's
	// function) and are rewritten with the rest.
	return outsideQuotes(q, "'", false, func(seg string) string { return postgresCode(seg, now) })
}

func postgresCode(q string, now time.Time) string {
	lit := "'" + now.UTC().Format("2006-01-02 15:04:05.999999") + "+00'::timestamptz"
	q = pgDefault.ReplaceAllLiteralString(q, pgDefaultGap)
	q = pgNow.ReplaceAllString(q, "${1}"+strings.ReplaceAll(lit, "$", "$$"))
	q = pgCalls.ReplaceAllStringFunc(q, forbid)
	return pgWords.ReplaceAllStringFunc(q, func(w string) string { return forbid(w) + "()" })
}

func rewriteMySQL(q string, now time.Time) string {
	// The store interpolates parameters into the text, so values are
	// quoted strings there: leave them as they are.
	return outsideQuotes(q, `'"`, true, func(seg string) string { return mysqlCode(seg, now) })
}

func mysqlCode(q string, now time.Time) string {
	q = myDefault.ReplaceAllLiteralString(q, "")
	q = myNow.ReplaceAllStringFunc(q, func(m string) string {
		sub := myNow.FindStringSubmatch(m)
		digits, _ := strconv.Atoi(sub[3])
		return sub[1] + mysqlLiteral(now, digits)
	})
	q = myCalls.ReplaceAllStringFunc(q, forbid)
	q = myNoArgs.ReplaceAllStringFunc(q, forbid)
	return myWords.ReplaceAllStringFunc(q, func(w string) string { return forbid(w) + "()" })
}

// mysqlLiteral is now as a DATETIME literal with digits fractional digits,
// truncated as the server truncates UTC_TIMESTAMP(digits).
func mysqlLiteral(now time.Time, digits int) string {
	layout := "2006-01-02 15:04:05"
	if digits > 0 {
		layout += "." + strings.Repeat("0", min(digits, 6))
	}
	unit := time.Second
	for range min(digits, 6) {
		unit /= 10
	}
	return "TIMESTAMP'" + now.UTC().Truncate(unit).Format(layout) + "'"
}

// forbid renames a clock function call (or keyword) to one that does not
// exist, keeping what follows it intact.
func forbid(m string) string {
	name := strings.ToLower(strings.TrimRight(m, "( \t\n"))
	name = strings.NewReplacer(" ", "", "\t", "", "\n", "", ".", "_").Replace(name)
	if strings.HasSuffix(m, "(") {
		return Forbidden + name + "("
	}
	return Forbidden + name
}

// outsideQuotes applies f to the parts of q outside quoted strings (quote
// characters in quotes, doubled to escape, and with backslash escapes where
// backslash is set) and comments, and keeps those as they are: an
// apostrophe in a comment opens no string.
func outsideQuotes(q, quotes string, backslash bool, f func(string) string) string {
	if !strings.ContainsAny(q, quotes+"-/#") {
		return f(q)
	}
	var out strings.Builder
	start := 0
	for i := 0; i < len(q); i++ {
		end := skip(q, i, quotes, backslash)
		if end == i {
			continue
		}
		out.WriteString(f(q[start:i]))
		out.WriteString(q[i:end])
		start, i = end, end-1
	}
	out.WriteString(f(q[start:]))
	return out.String()
}

// skip returns the index just past the string or comment that opens at
// q[i], or i when none does.
func skip(q string, i int, quotes string, backslash bool) int {
	switch {
	case strings.HasPrefix(q[i:], "--"), backslash && q[i] == '#':
		if j := strings.IndexByte(q[i:], '\n'); j >= 0 {
			return i + j
		}
		return len(q)
	case strings.HasPrefix(q[i:], "/*"):
		if j := strings.Index(q[i+2:], "*/"); j >= 0 {
			return i + 2 + j + 2
		}
		return len(q)
	case strings.IndexByte(quotes, q[i]) >= 0:
		return closingQuote(q, i, backslash)
	}
	return i
}

// closingQuote returns the index just past the string that opens at q[i].
func closingQuote(q string, i int, backslash bool) int {
	quote := q[i]
	for j := i + 1; j < len(q); j++ {
		switch {
		case backslash && q[j] == '\\':
			j++
		case q[j] == quote && j+1 < len(q) && q[j+1] == quote:
			j++
		case q[j] == quote:
			return j + 1
		}
	}
	return len(q)
}
