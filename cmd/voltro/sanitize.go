package main

import (
	"strconv"
	"strings"
	"unicode"
)

// term makes s safe to print on a terminal: each control or invisible
// formatting character (C0 with tab and newline, DEL, C1, bidi overrides)
// is written as a Go escape (\x1b, \u202e). Workflow names, errors,
// inputs and outputs come from the database, where any writer may have put
// an escape sequence that would move the cursor, retitle the window or
// hide text.
func term(s string) string {
	if strings.IndexFunc(s, isTermControl) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isTermControl(r) {
			q := strconv.QuoteRune(r) // '\x1b'
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isTermControl(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == unicode.ReplacementChar
}
