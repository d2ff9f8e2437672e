// Tests of the cron parser and next-tick calculator: parse tables, tick
// sequences across time-zone transitions and leap years, a brute-force
// reference, and golden data recorded from robfig/cron before it was removed.
package schedule

import (
	"bufio"
	"compress/gzip"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/errs"
)

func mustLoad(t testing.TB, zone string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func mustSpec(t testing.TB, expr, zone string) Spec {
	t.Helper()
	s, err := ParseSpec(expr, zone)
	if err != nil {
		t.Fatalf("ParseSpec(%q, %q): %v", expr, zone, err)
	}
	return s
}

// ticks is n successive ticks after start.
func ticks(s Spec, start time.Time, n int) []time.Time {
	var out []time.Time
	for at := start; len(out) < n; {
		at = s.Next(at)
		if at.IsZero() {
			break
		}
		out = append(out, at)
	}
	return out
}

func TestCronParseErrors(t *testing.T) {
	cases := []struct {
		expr string
		want []string // fragments of the message
	}{
		{"* * * *", []string{"expected 5 to 6 fields, found 4"}},
		{"* * * * * * *", []string{"expected 5 to 6 fields, found 7"}},
		{"61 * * * *", []string{`minute field "61"`, "61 is above maximum (59)", "allowed: 0-59"}},
		{"99 * * * * *", []string{`second field "99"`, "above maximum (59)"}},
		{"0 24 * * *", []string{`hour field "24"`, "24 is above maximum (23)", "allowed: 0-23"}},
		{"0 0 0 * *", []string{`day-of-month field "0"`, "0 is below minimum (1)", "allowed: 1-31"}},
		{"0 0 32 * *", []string{`day-of-month field "32"`, "32 is above maximum (31)"}},
		{"0 0 * 13 *", []string{`month field "13"`, "13 is above maximum (12)", "allowed: 1-12 or JAN-DEC"}},
		{"0 0 * 0 *", []string{`month field "0"`, "0 is below minimum (1)"}},
		{"0 0 * * 7", []string{`day-of-week field "7"`, "7 is above maximum (6)", "Sunday is 0"}},
		{"0 0 * * SUN-7", []string{`day-of-week field "SUN-7"`, "7 is above maximum (6)"}},
		{"0 0 * * funday", []string{`day-of-week field "funday"`, `"funday" is neither a number nor a day-of-week name`, "SUN-SAT"}},
		{"0 0 * january *", []string{`month field "january"`, `"january" is neither a number nor a month name`}},
		{"0 0 * * mon-frix", []string{`"frix" is neither a number nor a day-of-week name`}},
		{"0 0 mon * *", []string{`day-of-month field "mon"`, `"mon" is not a number`}},
		{"x * * * *", []string{`minute field "x"`, `"x" is not a number`}},
		{"1.5 * * * *", []string{`"1.5" is not a number`}},
		{"0x5 * * * *", []string{`"0x5" is not a number`}},
		{"5-1 * * * *", []string{`minute field "5-1"`, `range "5-1" starts after it ends (5 > 1)`}},
		{"70/5 * * * *", []string{`minute field "70/5": 70 is above maximum (59)`}},
		{"30-70 * * * *", []string{"70 is above maximum (59)"}},
		{"1-2-3 * * * *", []string{`"1-2-3" has more than one "-"`}},
		{"1/2/3 * * * *", []string{`"1/2/3" has more than one "/"`}},
		{"1- * * * *", []string{`minute field "1-"`, "a value is missing"}},
		{"-5 * * * *", []string{"a value is missing"}},
		{"*/0 * * * *", []string{`minute field "*/0"`, `step "0" in "*/0" is not a positive whole number`}},
		{"*/x * * * *", []string{`step "x" in "*/x" is not a positive whole number`}},
		{"*/ * * * *", []string{`step "" in "*/"`}},
		{"*/99999999999999999999 * * * *", []string{"is not a positive whole number"}},
		{"*-5 * * * *", []string{`minute field "*-5"`, `a range cannot start with "*"`}},
		{"0 0 ?-1 * *", []string{`a range cannot start with "?"`}},
		{", * * * *", []string{`minute field "," has no value`}},
		{"1,61 * * * *", []string{`minute field "1,61"`, "61 is above maximum (59)"}},
		{"0 0 30 2 *", []string{`it matches no date: day-of-month "30" never falls in month "2"`, "29 days"}},
		{"0 0 31 apr,jun *", []string{`day-of-month "31" never falls in month "apr,jun"`, "30 days"}},
		{"0 0 31 2 ?", []string{"matches no date"}},
		{"@fortnightly", []string{`unrecognized descriptor "@fortnightly"`, "@hourly"}},
		{"@Daily", []string{`unrecognized descriptor "@Daily"`}},
		{"@daily *", []string{"unrecognized descriptor"}},
	}
	for _, c := range cases {
		_, err := ParseSpec(c.expr, "")
		if !errors.Is(err, errs.ErrInvalidArgument) {
			t.Errorf("ParseSpec(%q): %v, want invalid_argument", c.expr, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ParseSpec(%q): %q lacks %q", c.expr, err, w)
			}
		}
	}
}

// TestCronParseAccepts: what each accepted form means, as ticks in UTC.
func TestCronParseAccepts(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // a Thursday
	at := func(s string) time.Time {
		v, err := time.Parse("2006-01-02 15:04:05", s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		expr string
		want []string
	}{
		{"* * * * *", []string{"2026-01-01 00:01:00", "2026-01-01 00:02:00"}},
		{"* * * * * *", []string{"2026-01-01 00:00:01", "2026-01-01 00:00:02"}},
		{"*/20 * * * * *", []string{"2026-01-01 00:00:20", "2026-01-01 00:00:40", "2026-01-01 00:01:00"}},
		{"5/10 * * * *", []string{"2026-01-01 00:05:00", "2026-01-01 00:15:00"}},
		{"50-59/5 * * * *", []string{"2026-01-01 00:50:00", "2026-01-01 00:55:00", "2026-01-01 01:50:00"}},
		{"1-10/4,30 * * * *", []string{"2026-01-01 00:01:00", "2026-01-01 00:05:00", "2026-01-01 00:09:00", "2026-01-01 00:30:00"}},
		{"*/100 * * * *", []string{"2026-01-01 01:00:00", "2026-01-01 02:00:00"}}, // a step past the range: its start only
		{"1,,2 * * * *", []string{"2026-01-01 00:01:00", "2026-01-01 00:02:00", "2026-01-01 01:01:00"}},
		{"+05 007 * * *", []string{"2026-01-01 07:05:00", "2026-01-02 07:05:00"}},
		{"0 0 * * ?", []string{"2026-01-02 00:00:00"}},
		{"? ? ? ? ?", []string{"2026-01-01 00:01:00"}},
		{"0 0 * * MON-FRI", []string{"2026-01-02 00:00:00", "2026-01-05 00:00:00"}},
		{"0 0 * * mon-Fri", []string{"2026-01-02 00:00:00", "2026-01-05 00:00:00"}},
		{"0 0 * * SUN", []string{"2026-01-04 00:00:00", "2026-01-11 00:00:00"}},
		{"0 0 * * 0", []string{"2026-01-04 00:00:00"}},
		{"0 0 * * sat-sun", nil}, // SUN is 0: an empty range, refused below
		{"0 0 * * sun-sat/3", []string{"2026-01-03 00:00:00", "2026-01-04 00:00:00", "2026-01-07 00:00:00"}},
		{"0 0 1 jan-mar/2 *", []string{"2026-03-01 00:00:00", "2027-01-01 00:00:00"}},
		{"0 0 1 FEB,nov *", []string{"2026-02-01 00:00:00", "2026-11-01 00:00:00"}},
		// both day fields restricted: either matches
		{"0 0 13 * FRI", []string{"2026-01-02 00:00:00", "2026-01-09 00:00:00", "2026-01-13 00:00:00", "2026-01-16 00:00:00"}},
		// one of them "*" (or "?", or "*/1"): the other rules
		{"0 0 13 * *", []string{"2026-01-13 00:00:00", "2026-02-13 00:00:00"}},
		{"0 0 * * FRI", []string{"2026-01-02 00:00:00", "2026-01-09 00:00:00"}},
		{"0 0 */1 * FRI", []string{"2026-01-02 00:00:00", "2026-01-09 00:00:00"}},
		// "*/2" is a restriction, not a star: either matches
		{"0 0 */2 * FRI", []string{"2026-01-02 00:00:00", "2026-01-03 00:00:00", "2026-01-05 00:00:00", "2026-01-07 00:00:00"}},
		{"0 0 13 * 0-6", []string{"2026-01-02 00:00:00", "2026-01-03 00:00:00"}},
		{"0 0 29 2 *", []string{"2028-02-29 00:00:00", "2032-02-29 00:00:00"}},
		{"0 0 31 * *", []string{"2026-01-31 00:00:00", "2026-03-31 00:00:00", "2026-05-31 00:00:00"}},
		{"0 0 30 2 MON", []string{"2026-02-02 00:00:00"}}, // no 30 February, but Mondays in February
		{"@yearly", []string{"2027-01-01 00:00:00", "2028-01-01 00:00:00"}},
		{"@annually", []string{"2027-01-01 00:00:00"}},
		{"@monthly", []string{"2026-02-01 00:00:00", "2026-03-01 00:00:00"}},
		{"@weekly", []string{"2026-01-04 00:00:00", "2026-01-11 00:00:00"}},
		{"@daily", []string{"2026-01-02 00:00:00", "2026-01-03 00:00:00"}},
		{"@midnight", []string{"2026-01-02 00:00:00"}},
		{"@hourly", []string{"2026-01-01 01:00:00", "2026-01-01 02:00:00"}},
		{"  0\t9  *  *  * ", []string{"2026-01-01 09:00:00"}},
	}
	for _, c := range cases {
		s, err := ParseSpec(c.expr, "")
		if c.want == nil {
			if err == nil {
				t.Errorf("ParseSpec(%q) accepted", c.expr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseSpec(%q): %v", c.expr, err)
			continue
		}
		got := ticks(s, start, len(c.want))
		for i, w := range c.want {
			if i >= len(got) || !got[i].Equal(at(w)) {
				t.Errorf("%q: ticks %v, want %v", c.expr, got, c.want)
				break
			}
		}
	}
}

// dstCase is a tick sequence in a zone, each tick written as local time
// with its offset.
type dstCase struct {
	name, expr, zone, start string
	want                    []string
}

func checkTicks(t *testing.T, c dstCase) {
	t.Helper()
	s := mustSpec(t, c.expr, c.zone)
	loc := mustLoad(t, c.zone)
	start, err := time.Parse(time.RFC3339, c.start)
	if err != nil {
		t.Fatal(err)
	}
	got := ticks(s, start, len(c.want))
	var gotText []string
	for _, g := range got {
		gotText = append(gotText, g.In(loc).Format(time.RFC3339))
	}
	if strings.Join(gotText, " ") != strings.Join(c.want, " ") {
		t.Errorf("%s: %q in %s after %s:\n got %v\nwant %v", c.name, c.expr, c.zone, c.start, gotText, c.want)
	}
}

// TestCronDST: the documented behaviour at time-zone transitions (see
// cronExpr.next). New York springs forward at 02:00 EST to 03:00 EDT on
// 2026-03-08 and falls back at 02:00 EDT to 01:00 EST on 2026-11-01; London
// at 01:00 GMT to 02:00 BST on 2026-03-29 and at 02:00 BST to 01:00 GMT on
// 2026-10-25.
func TestCronDST(t *testing.T) {
	const ny, london = "America/New_York", "Europe/London"
	for _, c := range []dstCase{
		// spring forward, fixed time: the skipped 02:30 ticks at 03:00 EDT
		{"ny skipped", "30 2 * * *", ny, "2026-03-07T12:00:00-05:00",
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"}},
		{"ny skipped on the hour", "0 2 * * *", ny, "2026-03-07T12:00:00-05:00",
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:00:00-04:00"}},
		// several skipped times and 03:00 itself give one tick
		{"ny skipped collapse", "0 0,30 2,3 * * *", ny, "2026-03-08T01:00:00-05:00",
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-08T03:30:00-04:00", "2026-03-09T02:00:00-04:00"}},
		{"ny skipped seconds", "*/10 30 2 * * *", ny, "2026-03-08T01:00:00-05:00",
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00", "2026-03-09T02:30:10-04:00"}},
		{"ny just before the gap", "59 1 * * *", ny, "2026-03-08T00:00:00-05:00",
			[]string{"2026-03-08T01:59:00-05:00", "2026-03-09T01:59:00-04:00"}},
		{"ny after the gap", "0 3 * * *", ny, "2026-03-08T00:00:00-05:00",
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-09T03:00:00-04:00"}},
		// spring forward, periodic: the cadence goes on, the skipped hour has no ticks
		{"ny periodic gap", "*/20 * * * *", ny, "2026-03-08T01:00:00-05:00",
			[]string{"2026-03-08T01:20:00-05:00", "2026-03-08T01:40:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-08T03:20:00-04:00"}},
		{"ny periodic within the skipped hour", "*/20 2 * * *", ny, "2026-03-08T00:00:00-05:00",
			[]string{"2026-03-09T02:00:00-04:00"}},
		{"ny hourly gap", "@hourly", ny, "2026-03-08T00:30:00-05:00",
			[]string{"2026-03-08T01:00:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-08T04:00:00-04:00"}},
		// fall back, fixed time: 01:30 ticks once, in EDT
		{"ny repeated", "30 1 * * *", ny, "2026-10-31T12:00:00-04:00",
			[]string{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
		{"ny repeated from inside", "30 1 * * *", ny, "2026-11-01T01:10:00-05:00",
			[]string{"2026-11-02T01:30:00-05:00"}},
		{"ny repeated minutes", "0 0,45 1 * * *", ny, "2026-11-01T00:50:00-04:00",
			[]string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:45:00-04:00", "2026-11-02T01:00:00-05:00"}},
		{"ny after the repeat", "0 2 * * *", ny, "2026-10-31T12:00:00-04:00",
			[]string{"2026-11-01T02:00:00-05:00", "2026-11-02T02:00:00-05:00"}},
		// fall back, periodic: both passes
		{"ny periodic repeat", "*/20 * * * *", ny, "2026-11-01T01:00:00-04:00",
			[]string{"2026-11-01T01:20:00-04:00", "2026-11-01T01:40:00-04:00", "2026-11-01T01:00:00-05:00",
				"2026-11-01T01:20:00-05:00", "2026-11-01T01:40:00-05:00", "2026-11-01T02:00:00-05:00"}},
		{"ny hourly repeat", "@hourly", ny, "2026-11-01T00:30:00-04:00",
			[]string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00", "2026-11-01T02:00:00-05:00"}},
		{"ny periodic in the repeated hour", "*/30 1 * * *", ny, "2026-11-01T00:00:00-04:00",
			[]string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-01T01:00:00-05:00", "2026-11-01T01:30:00-05:00",
				"2026-11-02T01:00:00-05:00"}},
		{"ny daily", "@daily", ny, "2026-03-07T00:00:00-05:00",
			[]string{"2026-03-08T00:00:00-05:00", "2026-03-09T00:00:00-04:00"}},

		{"london skipped", "30 1 * * *", london, "2026-03-28T12:00:00Z",
			[]string{"2026-03-29T02:00:00+01:00", "2026-03-30T01:30:00+01:00"}},
		{"london not skipped", "30 2 * * *", london, "2026-03-28T12:00:00Z",
			[]string{"2026-03-29T02:30:00+01:00", "2026-03-30T02:30:00+01:00"}},
		{"london periodic gap", "*/30 * * * *", london, "2026-03-29T00:15:00Z",
			[]string{"2026-03-29T00:30:00Z", "2026-03-29T02:00:00+01:00", "2026-03-29T02:30:00+01:00"}},
		{"london repeated", "30 1 * * *", london, "2026-10-24T12:00:00+01:00",
			[]string{"2026-10-25T01:30:00+01:00", "2026-10-26T01:30:00Z"}},
		{"london fixed repeat", "15,45 1 * * *", london, "2026-10-25T00:00:00+01:00",
			[]string{"2026-10-25T01:15:00+01:00", "2026-10-25T01:45:00+01:00", "2026-10-26T01:15:00Z"}},
		{"london periodic repeat star", "*/30 * * * *", london, "2026-10-25T00:50:00+01:00",
			[]string{"2026-10-25T01:00:00+01:00", "2026-10-25T01:30:00+01:00", "2026-10-25T01:00:00Z", "2026-10-25T01:30:00Z", "2026-10-25T02:00:00Z"}},
		{"london weekly", "@weekly", london, "2026-03-22T12:00:00Z",
			[]string{"2026-03-29T00:00:00Z", "2026-04-05T00:00:00+01:00"}},
	} {
		checkTicks(t, c)
	}
}

// TestCronDSTOddZones: midnight skipped (Sao Paulo 2018, Havana), a 30-minute
// shift (Lord Howe), a whole day skipped (Samoa 2011), a standard offset
// moved back (Moscow 2014).
func TestCronDSTOddZones(t *testing.T) {
	for _, c := range []dstCase{
		// Sao Paulo, 2018-11-04 00:00 -03 became 01:00 -02: @daily ticks at
		// 01:00 (robfig/cron skipped the day)
		{"sao paulo daily", "@daily", "America/Sao_Paulo", "2018-11-03T12:00:00-03:00",
			[]string{"2018-11-04T01:00:00-02:00", "2018-11-05T00:00:00-02:00"}},
		{"sao paulo hourly", "@hourly", "America/Sao_Paulo", "2018-11-03T23:30:00-03:00",
			[]string{"2018-11-04T01:00:00-02:00", "2018-11-04T02:00:00-02:00"}},
		// 2019-02-17 00:00 -02 became 23:00 -03 the day before: 23:00-23:59 twice
		{"sao paulo repeated", "30 23 * * *", "America/Sao_Paulo", "2019-02-16T12:00:00-02:00",
			[]string{"2019-02-16T23:30:00-02:00", "2019-02-17T23:30:00-03:00"}},
		{"sao paulo repeated midnight", "@daily", "America/Sao_Paulo", "2019-02-16T12:00:00-02:00",
			[]string{"2019-02-17T00:00:00-03:00", "2019-02-18T00:00:00-03:00"}},
		{"havana daily", "@daily", "America/Havana", "2026-03-07T12:00:00-05:00",
			[]string{"2026-03-08T01:00:00-04:00", "2026-03-09T00:00:00-04:00"}},
		// Lord Howe, 2026-10-04 02:00 +10:30 became 02:30 +11
		{"lord howe hourly", "0 * * * *", "Australia/Lord_Howe", "2026-10-04T00:30:00+10:30",
			[]string{"2026-10-04T01:00:00+10:30", "2026-10-04T03:00:00+11:00"}},
		{"lord howe fixed", "0 2 * * *", "Australia/Lord_Howe", "2026-10-03T12:00:00+10:30",
			[]string{"2026-10-04T02:30:00+11:00", "2026-10-05T02:00:00+11:00"}},
		{"lord howe fixed 02:15", "15 2 * * *", "Australia/Lord_Howe", "2026-10-03T12:00:00+10:30",
			[]string{"2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00"}},
		// Samoa went from -10 to +14: 2011-12-30 never happened
		// (robfig/cron's Next looped forever here)
		{"apia daily", "0 9 * * *", "Pacific/Apia", "2011-12-29T12:00:00-10:00",
			[]string{"2011-12-31T00:00:00+14:00", "2011-12-31T09:00:00+14:00", "2012-01-01T09:00:00+14:00"}},
		{"apia monthly", "@monthly", "Pacific/Apia", "2011-12-01T12:00:00-10:00",
			[]string{"2012-01-01T00:00:00+14:00"}},
		{"apia day 30", "0 0 30 * *", "Pacific/Apia", "2011-12-01T12:00:00-10:00",
			[]string{"2011-12-31T00:00:00+14:00", "2012-01-30T00:00:00+14:00"}},
		// Friday 30 December 09:00 was skipped too
		{"apia friday 13", "0 9 13 * FRI", "Pacific/Apia", "2011-12-29T12:00:00-10:00",
			[]string{"2011-12-31T00:00:00+14:00", "2012-01-06T09:00:00+14:00", "2012-01-13T09:00:00+14:00"}},
		{"apia periodic", "0 */12 * * *", "Pacific/Apia", "2011-12-29T06:00:00-10:00",
			[]string{"2011-12-29T12:00:00-10:00", "2011-12-31T00:00:00+14:00", "2011-12-31T12:00:00+14:00"}},
		// Chatham, 2091-04-01 03:45 +13:45 becomes 02:45 +12:45: from inside
		// the repeated hour, periodic, its second 03:00 (robfig/cron
		// returned the first one, before its argument)
		{"chatham periodic repeat", "*/56 3 * * *", "Pacific/Chatham", "2091-04-01T02:56:00+12:45",
			[]string{"2091-04-01T03:00:00+12:45", "2091-04-01T03:56:00+12:45", "2091-04-02T03:00:00+12:45"}},
		// Moscow, 2014-10-26 02:00 +04 became 01:00 +03
		{"moscow repeated", "30 1 * * *", "Europe/Moscow", "2014-10-25T12:00:00+04:00",
			[]string{"2014-10-26T01:30:00+04:00", "2014-10-27T01:30:00+03:00"}},
	} {
		checkTicks(t, c)
	}
}

func TestCronLeapYears(t *testing.T) {
	for _, c := range []dstCase{
		{"feb 29", "0 0 29 2 *", "UTC", "2024-02-29T00:00:00Z",
			[]string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		// 2100 is not a leap year: eight years between two 29 Februaries
		// (robfig/cron gave up after five and returned the zero time)
		{"feb 29 across 2100", "0 0 29 2 *", "UTC", "2096-03-01T00:00:00Z",
			[]string{"2104-02-29T00:00:00Z", "2108-02-29T00:00:00Z"}},
		{"2000 is one", "0 12 29 2 *", "UTC", "1999-01-01T00:00:00Z",
			[]string{"2000-02-29T12:00:00Z", "2004-02-29T12:00:00Z"}},
		{"feb 29 or monday", "0 0 29 2 MON", "UTC", "2027-02-20T00:00:00Z",
			[]string{"2027-02-22T00:00:00Z", "2028-02-07T00:00:00Z"}},
		{"last of february", "0 0 28,29 2 *", "Europe/Paris", "2027-01-01T00:00:00Z",
			[]string{"2027-02-28T00:00:00+01:00", "2028-02-28T00:00:00+01:00", "2028-02-29T00:00:00+01:00"}},
		{"the 31st", "0 0 31 * *", "UTC", "2026-01-31T00:00:00Z",
			[]string{"2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z", "2026-07-31T00:00:00Z", "2026-08-31T00:00:00Z"}},
		{"new year", "@yearly", "America/New_York", "2026-12-31T23:59:59-05:00",
			[]string{"2027-01-01T00:00:00-05:00"}},
		{"last second of the year", "59 59 23 31 12 *", "UTC", "2026-06-01T00:00:00Z",
			[]string{"2026-12-31T23:59:59Z", "2027-12-31T23:59:59Z"}},
	} {
		checkTicks(t, c)
	}
}

func TestCronNextEdges(t *testing.T) {
	s := mustSpec(t, "* * * * * *", "")
	// strictly after, rounded up to the whole second
	for _, c := range []struct{ at, want time.Time }{
		{time.Unix(100, 0), time.Unix(101, 0)},
		{time.Unix(100, 1), time.Unix(101, 0)},
		{time.Unix(100, 999_999_999), time.Unix(101, 0)},
		{time.Unix(-100, 500), time.Unix(-99, 0)},
	} {
		if got := s.Next(c.at); !got.Equal(c.want) {
			t.Errorf("Next(%v) = %v, want %v", c.at, got, c.want)
		}
	}
	// the zero time and the ends of the range
	if got := mustSpec(t, "@daily", "").Next(time.Time{}); !got.Equal(time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("Next(zero) = %v", got)
	}
	if got := mustSpec(t, "@yearly", "").Next(time.Date(9999, 6, 1, 0, 0, 0, 0, time.UTC)); !got.IsZero() {
		t.Errorf("Next in 9999 = %v, want none", got)
	}
	if got := mustSpec(t, "@yearly", "").Next(time.Date(9998, 6, 1, 0, 0, 0, 0, time.UTC)); !got.Equal(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("Next in 9998 = %v", got)
	}
	for _, at := range []time.Time{time.Unix(1<<62, 0), time.Unix(-1<<62, 0), time.Date(-5000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		if got := s.Next(at); !got.IsZero() && !got.After(at) {
			t.Errorf("Next(%v) = %v", at, got)
		}
	}
}

// bruteTicks lists the ticks in [from, to) by the rule next documents,
// looking at every second: a periodic expression ticks whenever the wall
// clock shows a matching time; a fixed-time one when the wall clock first
// reaches or passes a matching time. walls[i] is the wall-clock reading at
// from-lookBack+i, for every second up to to.
func bruteTicks(c *cronExpr, walls []int64, from, to, lookBack int64) []int64 {
	var out []int64
	high := int64(-1 << 63) // the latest wall-clock time shown so far
	for _, w := range walls[:lookBack] {
		high = max(high, w)
	}
	for u := from; u < to; u++ {
		w := walls[u-from+lookBack]
		tick := false
		if c.periodic {
			tick = c.matches(time.Unix(w, 0).UTC())
		} else {
			for v := high + 1; v <= w && !tick; v++ {
				tick = c.matches(time.Unix(v, 0).UTC())
			}
		}
		if tick {
			out = append(out, u)
		}
		high = max(high, w)
	}
	return out
}

// TestCronAgainstBruteForce compares Next with bruteTicks over a few hours
// around transitions.
func TestCronAgainstBruteForce(t *testing.T) {
	exprs := []string{"*/7 * * * * *", "* */13 * * *", "*/20 * * * *", "0 * * * *", "0 0,30 1-3 * * *", "30 1 * * *", "30 2 * * *",
		"59 59 1 * * *", "0 0 2 * * *", "*/10 30 2 * * *", "0 3 * * *", "@daily", "15,45 * * * *", "0 23 * * *", "30 0 * * *"}
	windows := []struct {
		zone string
		at   string
	}{
		{"America/New_York", "2026-03-08T02:00:00-05:00"},
		{"America/New_York", "2026-11-01T01:00:00-05:00"},
		{"Europe/London", "2026-03-29T01:00:00Z"},
		{"Europe/London", "2026-10-25T01:00:00Z"},
		{"Australia/Lord_Howe", "2026-10-04T02:00:00+10:30"},
		{"Australia/Lord_Howe", "2026-04-05T02:00:00+11:00"},
		{"America/Sao_Paulo", "2018-11-04T00:00:00-03:00"},
		{"America/Sao_Paulo", "2019-02-16T23:00:00-03:00"},
		{"Pacific/Chatham", "2026-09-27T02:45:00+12:45"},
		{"Pacific/Apia", "2011-12-29T23:00:00-10:00"},
		{"Europe/Moscow", "2014-10-26T01:00:00+03:00"},
		{"Asia/Kolkata", "2026-03-08T02:00:00+05:30"},
	}
	const span, lookBack = 3 * 3600, 3 * 3600
	for _, w := range windows {
		loc := mustLoad(t, w.zone)
		center, err := time.Parse(time.RFC3339, w.at)
		if err != nil {
			t.Fatal(err)
		}
		from, to := center.Unix()-span, center.Unix()+span
		var walls []int64
		for u := from - lookBack; u < to; u++ {
			_, off := time.Unix(u, 0).In(loc).Zone()
			walls = append(walls, u+int64(off))
		}
		for _, expr := range exprs {
			s := mustSpec(t, expr, w.zone)
			want := bruteTicks(s.cron, walls, from, to, lookBack)
			var got []int64
			for at := time.Unix(from-1, 0); ; {
				at = s.Next(at)
				if at.IsZero() || at.Unix() >= to {
					break
				}
				got = append(got, at.Unix())
			}
			if !equalInts(got, want) {
				t.Errorf("%q in %s around %s:\n got %v\nwant %v", expr, w.zone, w.at, unixes(got, loc), unixes(want, loc))
			}
		}
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func unixes(us []int64, loc *time.Location) []string {
	var out []string
	for _, u := range us {
		out = append(out, time.Unix(u, 0).In(loc).Format(time.RFC3339))
	}
	return out
}

// The golden data was recorded from ParseSpec as it was on
// github.com/robfig/cron/v3 v3.0.1 by cron_robfig_gen_test.go, and the two
// were compared on random expressions by cron_robfig_diff_test.go, before
// the dependency was removed; both are in the history:
// git log -- internal/schedule/cron_robfig_gen_test.go internal/schedule/cron_robfig_diff_test.go

func readGolden(t *testing.T, name string) [][]string {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	sc := bufio.NewScanner(z)
	for sc.Scan() {
		if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
			rows = append(rows, strings.Split(line, "\t"))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestCronRobfigParseGolden: every expression robfig/cron accepted is
// accepted, with the same first ticks, and every one it refused is refused,
// except "*-…" ranges, which it read as "*".
func TestCronRobfigParseGolden(t *testing.T) {
	rows := readGolden(t, "cron_robfig_parse.txt.gz")
	if len(rows) < 1000 {
		t.Fatalf("only %d rows", len(rows))
	}
	var starRanges int
	for _, row := range rows {
		expr, err := strconv.Unquote(row[0])
		if err != nil {
			t.Fatal(err)
		}
		s, perr := ParseSpec(expr, "")
		switch {
		case row[1] == "error" && perr == nil:
			t.Errorf("%q: accepted, robfig/cron refused it: %s", expr, row[2])
		case row[1] == "ok" && perr != nil && (strings.Contains(expr, "*-") || strings.Contains(expr, "?-")):
			starRanges++
		case row[1] == "ok" && perr != nil:
			t.Errorf("%q: %v; robfig/cron accepted it", expr, perr)
		case row[1] == "ok":
			var got []string
			for _, tick := range ticks(s, robfigParseStart, 3) {
				got = append(got, strconv.FormatInt(tick.Unix(), 10))
			}
			if strings.Join(got, " ") != row[2] {
				t.Errorf("%q: ticks %v, robfig/cron %s", expr, got, row[2])
			}
		}
	}
	t.Logf("%d expressions; %d star ranges robfig/cron accepted are refused", len(rows), starRanges)
}

// robfigParseStart is when the recorded ticks of cron_robfig_parse start.
var robfigParseStart = time.Date(2026, 1, 31, 23, 59, 30, 0, time.UTC)

// TestCronRobfigNextGolden replays robfig/cron's tick sequences: each tick
// must be Next of the one before, except where the documented differences
// explain it (see cronExpr.next and robfigDifference).
func TestCronRobfigNextGolden(t *testing.T) {
	rows := readGolden(t, "cron_robfig_next.txt.gz")
	if len(rows) < 1000 {
		t.Fatalf("only %d rows", len(rows))
	}
	reasons := map[string]int{}
	var steps int
	for _, row := range rows {
		zone := row[0]
		expr, err := strconv.Unquote(row[1])
		if err != nil {
			t.Fatal(err)
		}
		loc := mustLoad(t, zone)
		s := mustSpec(t, expr, zone)
		prev, err := time.Parse(time.RFC3339Nano, row[2])
		if err != nil {
			t.Fatal(err)
		}
		for _, field := range strings.Fields(row[3]) {
			steps++
			got := s.Next(prev)
			var want time.Time
			switch field {
			case "hang", "never":
			default:
				if want, err = time.Parse(time.RFC3339, field); err != nil {
					t.Fatal(err)
				}
			}
			if field != "hang" && got.Equal(want) {
				prev = want
				continue
			}
			reason := robfigDifference(s.cron, loc, prev, got, want, field == "hang")
			if reason == "" {
				t.Errorf("%s %q: Next(%s) = %s, robfig/cron %s", zone, expr, prev.In(loc).Format(time.RFC3339),
					got.In(loc).Format(time.RFC3339), field)
				break
			}
			reasons[reason]++
			if want.IsZero() {
				break
			}
			prev = want
		}
	}
	t.Logf("%d rows, %d steps; differences: %v", len(rows), steps, reasons)
	for _, r := range []string{"skipped time", "repeated time", "robfig gave up after five years", "robfig hung",
		"robfig missed a tick", "robfig ticked at a non-matching time"} {
		if reasons[r] == 0 {
			t.Errorf("no %q difference: does the golden data still cover it?", r)
		}
	}
}

// robfigDifference names the reason why Next(prev) is got where robfig/cron
// computed want, or "": one of our documented choices (skipped and
// repeated times of fixed-time expressions, looking further than five
// years), or a robfig/cron bug. Its Next loops forever where a zone skips a
// day, and where a transition is at midnight or moves the clock by 30
// minutes it skips days (Lord Howe Island, 5 April 2026: 02:00 exists but
// robfig/cron's next "0 2 * * *" after 4 April is 6 April) and ticks at
// times that do not match (a Friday-and-Saturday "0 18 * * 5-6" on Sunday
// 8 March 2026 in Havana, "30 1 * * *" at 02:30 on Lord Howe Island), and
// in the repeated hour it can even return a tick before its argument.
func robfigDifference(c *cronExpr, loc *time.Location, prev, got, want time.Time, hung bool) string {
	offset := func(u time.Time) int64 {
		_, off := u.In(loc).Zone()
		return int64(off)
	}
	wall := func(u time.Time) int64 { return u.Unix() + offset(u) }
	isTick := func(u time.Time) bool { // by the rule of cronExpr.next, if u shows a matching time
		return c.matches(time.Unix(wall(u), 0).UTC()) && (c.periodic || wall(u) >= wallReached(u.Unix(), loc))
	}
	switch {
	case c != nil && !hung && !want.IsZero() && !want.After(prev):
		return "robfig went backwards"
	case c != nil && !hung && !want.IsZero() && !c.matches(time.Unix(wall(want), 0).UTC()):
		return "robfig ticked at a non-matching time"
	case c != nil && !got.IsZero() && (hung || want.IsZero() || got.Before(want)) && isTick(got):
		if hung {
			return "robfig hung"
		}
		if want.IsZero() {
			if got.In(loc).Year() > prev.Add(time.Second).In(loc).Year()+5 {
				return "robfig gave up after five years"
			}
			return ""
		}
		return "robfig missed a tick"
	case hung:
		// robfig/cron looped forever (Samoa's skipped day); TestCronDSTOddZones
		// and TestCronAgainstBruteForce check what we do there
		return "robfig hung"
	case want.IsZero() && !got.IsZero():
		if got.In(loc).Year() > prev.Add(time.Second).In(loc).Year()+5 {
			return "robfig gave up after five years"
		}
	case c == nil || c.periodic || got.IsZero():
	case got.Before(want):
		// got is the end of a gap in which a matching wall-clock time was skipped
		before := got.Add(-time.Second)
		if offset(got) <= offset(before) {
			return ""
		}
		for w := wall(before) + 1; w < wall(got); w++ {
			if c.matches(time.Unix(w, 0).UTC()) {
				return "skipped time"
			}
		}
	case got.After(want):
		// want shows a wall-clock time already shown before it
		if wall(want) < wallReached(want.Unix(), loc) {
			return "repeated time"
		}
	}
	return ""
}
