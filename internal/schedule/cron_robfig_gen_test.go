//go:build robfiggolden

// Records what the robfig/cron based ParseSpec accepts and which ticks it
// computes, so that the parser replacing it can be checked against it once
// robfig/cron is gone. Run with
//
//	go test -tags robfiggolden -run TestRecordRobfigGolden ./internal/schedule/
package schedule

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// goldenExprs are the expressions whose tick sequences are recorded.
var goldenExprs = []string{
	"* * * * *", "*/5 * * * *", "*/20 * * * *", "7,37 * * * *", "*/13 */7 * * * *",
	"0 * * * *", "30 * * * *", "0 */2 * * *", "*/20 1-2 * * *", "0 0,30 0-3 * * *",
	"15 1 * * *", "30 1 * * *", "59 1 * * *", "0 2 * * *", "30 2 * * *", "0 3 * * *", "0 0 * * *",
	"0 30 1 * * *", "5/10 30 2 * * *",
	"@hourly", "@daily", "@weekly", "@monthly", "@yearly",
	"0 0 29 2 *", "0 12 29 2 *", "0 0 29 2 1", "0 0 31 * *", "0 9 * * MON-FRI", "0 9 13 * FRI",
	"0 0 1,15 * 0", "30 8 */10 * *", "0 0 * 2 SUN", "0 0 1 JAN-MAR/2 *", "0 18 * * 5-6",
}

type goldenStart struct {
	zone string
	at   time.Time
}

// goldenStarts: for each zone, instants before and around its time-zone
// transitions in the years given, and a few plain ones.
func goldenStarts(t *testing.T) []goldenStart {
	zones := map[string][]int{
		"UTC": nil, "Asia/Kolkata": nil,
		"America/New_York": {2025, 2026}, "Europe/London": {2025, 2026}, "Australia/Sydney": {2026},
		"Australia/Lord_Howe": {2026}, "Pacific/Chatham": {2026}, "America/Havana": {2026},
		"America/Sao_Paulo": {2018, 2019}, "Pacific/Apia": {2011}, "Europe/Moscow": {2011, 2014},
	}
	plain := []time.Time{
		time.Date(2026, 1, 10, 12, 34, 56, 789_000_000, time.UTC),
		time.Date(2027, 12, 31, 23, 59, 59, 500_000_000, time.UTC),
		time.Date(2028, 2, 27, 23, 0, 0, 0, time.UTC),
		time.Date(2096, 3, 1, 0, 0, 0, 0, time.UTC), // no Feb 29 in 2100
	}
	var out []goldenStart
	for _, zone := range sortedKeys(zones) {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		for _, at := range plain {
			out = append(out, goldenStart{zone, at})
		}
		for _, year := range zones[zone] {
			at := time.Date(year, 1, 1, 0, 0, 0, 0, loc)
			for at.Year() == year {
				_, end := at.ZoneBounds()
				if end.IsZero() || end.Year() > year {
					break
				}
				for _, before := range []time.Duration{25 * time.Hour, 90 * time.Minute} {
					out = append(out, goldenStart{zone, end.Add(-before)})
				}
				at = end
			}
		}
	}
	return out
}

func sortedKeys(m map[string][]int) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	for i := range keys {
		for j := i + 1; j < len(keys); j++ {
			if keys[j] < keys[i] {
				keys[i], keys[j] = keys[j], keys[i]
			}
		}
	}
	return keys
}

// goldenParseExprs: the expressions whose acceptance is recorded.
func goldenParseExprs() []string {
	exprs := []string{
		"", " ", "*", "* * * *", "* * * * *", "* * * * * *", "* * * * * * *", "*\t*  *\n* *", "* * * * *\u00a0",
		"? ? ? ? ?", "0 0 * * ?", "0 0 ? * MON",
		"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly", "@Daily", "@DAILY",
		"@daily * * * * *", "@reboot", "@", "@ hourly", "@hourly\t",
		"0 0 30 2 *", "0 0 31 2 *", "0 0 31 4 *", "0 0 31 4,6,9,11 *", "0 0 30-31 2 *", "0 0 30 2 MON", "0 0 31 2 ?",
		"0 0 29 2 *", "0 0 31 */2 *", "0 0 31 2/2 *", "0 0 31 4 0-6", "0 0 31 4 *", "0 0 31 4 */1", "0 0 */31 4 *",
		"0 0 */30 2 *", "0 0 1 2 *",
		", * * * *", ",,, * * * *", "1,,2 * * * *", ",5 * * * *", "5, * * * *", "0 0 , * *", "0 0 * , *", "0 0 * * ,",
	}
	// every field with the same item variants, the others "*"
	items := []string{
		"*", "?", "*/1", "*/2", "*/5", "*/0", "*/", "*/x", "*/-1", "*/+2", "*/99", "*/100", "*/9223372036854775807",
		"*/9223372036854775808", "?/3", "**", "*-5", "*-", "*-5/2", "?-x", "*,5", "5,*", "*/2/3",
		"0", "1", "5", "6", "7", "11", "12", "13", "23", "24", "29", "30", "31", "32", "59", "60", "61", "99", "-1", "+5", "+", "05", "007",
		"99999999999", "99999999999999999999", "0x5", "1e1", "1.0", "", "a", "5a", "١",
		"1-5", "5-1", "0-0", "1-1", "0-59", "1-60", "1-2-3", "1-", "-5", "1-+3", "+1-3", "1--3",
		"1-5/2", "1-5/0", "1-5/6", "1-5/", "5/10", "5/0", "0/1", "1/2/3", "/5", "5/", "1-5/2/1",
		"1,5,9", "1-3,5-7", "1-3,7-5", "0,59", "1,60",
		"jan", "JAN", "Jan", "jAn", "feb", "dec", "jan-mar", "JAN-DEC/3", "mar-jan", "january", "j", "sun", "SUN", "Mon",
		"mon-fri", "MON-FRI", "sat-sun", "sun-sat", "thu,fri", "sun/2", "fri/2", "tue-thu/2", "mon-7", "sun-6", "frİ", "FRİ", "ſun",
		"jan/2", "1-jan",
	}
	for pos := 0; pos < 6; pos++ {
		for _, item := range items {
			if item == "" {
				continue
			}
			f := []string{"*", "*", "*", "*", "*", "*"}
			f[pos] = item
			exprs = append(exprs, strings.Join(f, " "))
			if pos > 0 {
				exprs = append(exprs, strings.Join(f[1:], " "))
			}
		}
	}
	return exprs
}

// robfigParseStart is when the recorded ticks of an accepted expression
// start.
var robfigParseStart = time.Date(2026, 1, 31, 23, 59, 30, 0, time.UTC)

func TestRecordRobfigGolden(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Generated by cron_robfig_gen_test.go from ParseSpec built on github.com/robfig/cron/v3 v3.0.1.\n")
	b.WriteString("# expression (Go-quoted) TAB ok TAB first three ticks after " + robfigParseStart.Format(time.RFC3339) + ", unix seconds\n")
	b.WriteString("# or expression TAB error TAB message. In UTC.\n")
	seen := map[string]bool{}
	for _, expr := range goldenParseExprs() {
		if seen[expr] {
			continue
		}
		seen[expr] = true
		s, err := ParseSpec(expr, "")
		if err != nil {
			fmt.Fprintf(&b, "%s\terror\t%s\n", strconv.Quote(expr), strings.ReplaceAll(err.Error(), "\n", " "))
			continue
		}
		var ticks []string
		for at, i := robfigParseStart, 0; i < 3; i++ {
			at = s.Next(at)
			ticks = append(ticks, strconv.FormatInt(at.Unix(), 10))
		}
		fmt.Fprintf(&b, "%s\tok\t%s\n", strconv.Quote(expr), strings.Join(ticks, " "))
	}
	writeGzip(t, "testdata/cron_robfig_parse.txt.gz", b.String())

	b.Reset()
	b.WriteString("# Generated by cron_robfig_gen_test.go from ParseSpec built on github.com/robfig/cron/v3 v3.0.1.\n")
	b.WriteString("# zone TAB expression (Go-quoted) TAB start TAB the next five ticks, each Next of the one before;\n")
	b.WriteString("# \"never\" is the zero time. Ticks are written in the zone.\n")
	for _, st := range goldenStarts(t) {
		for _, expr := range goldenExprs {
			var ticks string
			if st.zone == "Pacific/Apia" {
				ticks = robfigTicksIsolated(t, st.zone, expr, st.at)
			} else {
				ticks = robfigTicks(t, st.zone, expr, st.at)
			}
			fmt.Fprintf(&b, "%s\t%s\t%s\t%s\n", st.zone, strconv.Quote(expr), st.at.UTC().Format(time.RFC3339Nano), ticks)
		}
	}
	writeGzip(t, "testdata/cron_robfig_next.txt.gz", b.String())
}

func writeGzip(t *testing.T, path, text string) {
	var buf bytes.Buffer
	z, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	z.Write([]byte(text))
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// robfigTicks is the five ticks after start, each Next of the one before.
func robfigTicks(t *testing.T, zone, expr string, start time.Time) string {
	loc, _ := time.LoadLocation(zone)
	s, err := ParseSpec(expr, zone)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	var ticks []string
	for at, i := start, 0; i < 5; i++ {
		at = s.Next(at)
		if at.IsZero() {
			ticks = append(ticks, "never")
			break
		}
		ticks = append(ticks, at.In(loc).Format(time.RFC3339))
	}
	return strings.Join(ticks, " ")
}

// robfigTicksIsolated is robfigTicks in a child process killed after two
// seconds: robfig/cron's Next loops forever around Samoa's skipped day
// (Pacific/Apia, 30 December 2011). The ticks found before it hung are kept,
// then "hang".
func robfigTicksIsolated(t *testing.T, zone, expr string, start time.Time) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestRobfigOneTick$")
	cmd.Env = append(os.Environ(), "ROBFIG_ONE="+zone+"\t"+expr+"\t"+start.Format(time.RFC3339Nano))
	out, _ := cmd.Output()
	var ticks []string
	for _, line := range strings.Split(string(out), "\n") {
		if tick, ok := strings.CutPrefix(line, "TICK "); ok {
			ticks = append(ticks, tick)
		}
	}
	if len(ticks) < 5 && (len(ticks) == 0 || ticks[len(ticks)-1] != "never") {
		ticks = append(ticks, "hang")
	}
	return strings.Join(ticks, " ")
}

func TestRobfigOneTick(t *testing.T) {
	one := os.Getenv("ROBFIG_ONE")
	if one == "" {
		t.Skip("child of robfigTicksIsolated")
	}
	f := strings.Split(one, "\t")
	loc, _ := time.LoadLocation(f[0])
	s, err := ParseSpec(f[1], f[0])
	if err != nil {
		t.Fatal(err)
	}
	at, err := time.Parse(time.RFC3339Nano, f[2])
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		at = s.Next(at)
		if at.IsZero() {
			fmt.Println("TICK never")
			return
		}
		fmt.Printf("TICK %s\n", at.In(loc).Format(time.RFC3339))
		os.Stdout.Sync()
	}
}
