//go:build robfigdiff

// A differential check of the cron parser and Next against robfig/cron
// v3.0.1, run while it was still a dependency, before it was removed:
//
//	go test -tags robfigdiff -run TestRobfigDiffRandom ./internal/schedule/
//	go test -tags robfigdiff -run XXX -fuzz FuzzRobfigDiff ./internal/schedule/
//
// Parse acceptance must agree (except "*-…" ranges) and every differing
// tick must have a reason from robfigDifference; the differing ticks less
// than four days ahead are also checked against bruteTicks.
package schedule

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

var rparser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

var diffZones = []string{"UTC", "America/New_York", "Europe/London", "Australia/Lord_Howe", "America/Sao_Paulo", "America/Havana",
	"Pacific/Chatham", "Asia/Kolkata", "Australia/Sydney", "Europe/Moscow", "America/Santiago", "Asia/Tehran", "Africa/Casablanca"}

// robfigParse is robfig/cron's Parse, a panic being an error.
func robfigParse(body string) (s *cron.SpecSchedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, errRobfig
		}
	}()
	sch, err := rparser.Parse(body)
	if err != nil {
		return nil, err
	}
	ss, ok := sch.(*cron.SpecSchedule)
	if !ok {
		return nil, errRobfig
	}
	return ss, nil
}

var errRobfig = errors.New("robfig/cron panicked or gave no SpecSchedule")

// FuzzRobfigDiff compares robfig/cron and ParseSpec on any expression
// (Pacific/Apia is left out: robfig/cron's Next can loop forever there).
func FuzzRobfigDiff(f *testing.F) {
	for _, e := range []string{"* * * * *", "*/5 1-3 * * MON", "0 0 29 2 *", "5/10 * * JAN-mar/2 *", "0 0 13 * FRI", "30 2 * * *", "@weekly", "1,,2 * * * * *", "+5 * * * *"} {
		f.Add(e, uint8(1), int64(1_700_000_000))
	}
	f.Fuzz(func(t *testing.T, body string, zi uint8, start int64) {
		body = strings.TrimSpace(body)
		if body == "" || strings.HasPrefix(body, "@every") || strings.HasPrefix(body, "TZ=") || strings.HasPrefix(body, "CRON_TZ=") {
			return
		}
		zone := diffZones[int(zi)%len(diffZones)]
		loc, _ := time.LoadLocation(zone)
		rs, rerr := robfigParse(body)
		c, err := parseCronExpr(body)
		if rerr == nil && rs != nil {
			rs.Location = time.UTC
			done := make(chan time.Time, 1)
			go func() { done <- rs.Next(time.Now()) }()
			select {
			case n := <-done:
				if n.IsZero() {
					rerr, rs = errRobfig, nil
				}
			case <-time.After(5 * time.Second):
				t.Skip("robfig hung")
			}
		}
		robOK := rerr == nil && rs != nil
		if robOK != (err == nil) {
			if robOK && (strings.Contains(body, "*-") || strings.Contains(body, "?-")) {
				return
			}
			t.Fatalf("%q: robfig ok=%v (%v), ours %v", body, robOK, rerr, err)
		}
		if !robOK {
			return
		}
		rs.Location = loc
		// start within 1970..2100
		u := start % (130 * 365 * 86400)
		if u < 0 {
			u = -u
		}
		prev := time.Unix(u, int64(uint64(start)%1e9))
		for i := 0; i < 5; i++ {
			done := make(chan time.Time, 1)
			p := prev
			go func() { done <- rs.Next(p) }()
			var want time.Time
			select {
			case want = <-done:
			case <-time.After(5 * time.Second):
				t.Skipf("robfig hung: %q %s %v", body, zone, prev)
			}
			got := c.next(prev, loc)
			if got.Equal(want) {
				prev = want
				if want.IsZero() {
					return
				}
				continue
			}
			if robfigDifference(c, loc, prev, got, want, false) == "" {
				t.Fatalf("%q in %s: Next(%v) = %v, robfig %v", body, zone, prev.In(loc), got.In(loc), want.In(loc))
			}
			if want.IsZero() {
				return
			}
			prev = want
		}
	})
}

// TestRobfigDiffRandom compares robfig/cron and ParseSpec on 300,000
// random expressions of the grammar, from random instants, half of them
// shortly before a time-zone transition.
func TestRobfigDiffRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	item := func(min, max int, names []string) string {
		v := func() string {
			n := min + r.IntN(max-min+1)
			if names != nil && r.IntN(3) == 0 {
				s := names[n-min]
				if r.IntN(2) == 0 {
					s = strings.ToUpper(s)
				}
				return s
			}
			return strconv.Itoa(n)
		}
		switch r.IntN(8) {
		case 0:
			return "*"
		case 1:
			return "*/" + strconv.Itoa(1+r.IntN(max-min+2))
		case 2:
			return v()
		case 3:
			a, b := v(), v()
			return a + "-" + b
		case 4:
			return v() + "-" + v() + "/" + strconv.Itoa(1+r.IntN(max-min+1))
		case 5:
			return v() + "/" + strconv.Itoa(1+r.IntN(max-min+1))
		case 6:
			return "?"
		default:
			return v()
		}
	}
	field := func(min, max int, names []string) string {
		n := 1 + r.IntN(3)
		var items []string
		for i := 0; i < n; i++ {
			items = append(items, item(min, max, names))
		}
		return strings.Join(items, ",")
	}
	months := []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
	days := []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
	var compared, accepted, diffs, brutes int
	reasons := map[string]int{}
	for i := 0; i < 300000; i++ {
		fs := []string{field(0, 59, nil), field(0, 59, nil), field(0, 23, nil), field(1, 31, nil), field(1, 12, months), field(0, 6, days)}
		if r.IntN(3) == 0 { // simple, frequent fields
			fs[0] = "0"
			fs[1] = []string{"*", "0", "30", "*/15", "0,30"}[r.IntN(5)]
			fs[2] = []string{"*", "1", "2", "0-3", "*/2", "23", "0"}[r.IntN(7)]
		}
		if r.IntN(2) == 0 {
			fs = fs[1:]
		}
		body := strings.Join(fs, " ")
		zone := diffZones[r.IntN(len(diffZones))]
		loc, _ := time.LoadLocation(zone)
		rs, rerr := robfigParse(body)
		c, err := parseCronExpr(body)
		robOK := rerr == nil
		if robOK {
			rs.Location = time.UTC
			if rs.Next(time.Now()).IsZero() {
				robOK = false
			}
		}
		if robOK != (err == nil) {
			t.Fatalf("%q: robfig ok=%v (%v), ours %v", body, robOK, rerr, err)
		}
		if !robOK {
			continue
		}
		accepted++
		rs.Location = loc
		prev := time.Unix(r.Int64N(130*365*86400), r.Int64N(1e9))
		if r.IntN(2) == 0 { // near a transition
			_, end := prev.In(loc).ZoneBounds()
			if !end.IsZero() {
				prev = end.Add(-time.Duration(r.IntN(48*3600)) * time.Second)
			}
		}
		for j := 0; j < 4; j++ {
			want := rs.Next(prev)
			got := c.next(prev, loc)
			compared++
			if !got.Equal(want) {
				diffs++
				reason := robfigDifference(c, loc, prev, got, want, false)
				if reason == "" {
					t.Errorf("%q in %s: Next(%v) = %v, robfig %v", body, zone, prev.In(loc), got.In(loc), want.In(loc))
					break
				}
				reasons[reason]++
				end := got
				if want.After(end) {
					end = want
				}
				from := prev.Unix() + 1
				if !end.IsZero() && end.Unix()-from < 4*86400 {
					brutes++
					const lb = 3 * 3600
					var walls []int64
					for u := from - lb; u <= end.Unix(); u++ {
						_, off := time.Unix(u, 0).In(loc).Zone()
						walls = append(walls, u+int64(off))
					}
					bt := bruteTicks(c, walls, from, end.Unix()+1, lb)
					if len(bt) == 0 || bt[0] != got.Unix() {
						t.Errorf("brute force disagrees: %q in %s: Next(%v) = %v, robfig %v, brute %v", body, zone, prev.In(loc), got.In(loc), want.In(loc), unixes(bt, loc))
					}
				}
			}
			if want.IsZero() {
				break
			}
			prev = want
		}
	}
	t.Logf("%d differences checked by brute force", brutes)
	t.Logf("%d accepted, %d steps compared, %d differences: %v", accepted, compared, diffs, reasons)
}
