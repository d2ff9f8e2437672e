// Cron expressions: our own parser and next-tick calculator. They replaced
// github.com/robfig/cron/v3, which is unmaintained and panicked on odd input,
// and accept the language ParseSpec accepted with it (see parseCronExpr).

package schedule

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// cronExpr is a parsed five- or six-field expression or descriptor. Each
// field is a set of values, bit v set when v matches.
type cronExpr struct {
	second, minute, hour, dom, month, dow uint64

	// domStar and dowStar: the day-of-month or day-of-week field has an item
	// "*" or "?" with no step above 1. Then a day must match both day fields;
	// when neither is, it must match either one ("0 0 13 * FRI" is every 13th
	// and every Friday), as in robfig/cron and Vixie cron.
	domStar, dowStar bool

	// periodic: the minute or hour field has an item starting with "*" or "?"
	// ("*", "*/15", …). It decides what happens at a time-zone transition;
	// see next.
	periodic bool
}

// cronField is one of the six fields: its name, its bounds and the names
// it accepts for its values.
type cronField struct {
	name     string
	min, max int
	names    map[string]int // lower-case names, or nil
	allowed  string         // the accepted values, for error messages
}

var (
	secondField = cronField{"second", 0, 59, nil, "0-59"}
	minuteField = cronField{"minute", 0, 59, nil, "0-59"}
	hourField   = cronField{"hour", 0, 23, nil, "0-23"}
	domField    = cronField{"day-of-month", 1, 31, nil, "1-31"}
	monthField  = cronField{"month", 1, 12, map[string]int{
		"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
		"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
	}, "1-12 or JAN-DEC"}
	// Sunday is 0 only: robfig/cron refused 7, and so do we.
	dowField = cronField{"day-of-week", 0, 6, map[string]int{
		"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6,
	}, "0-6 or SUN-SAT, Sunday is 0"}
)

// parseCronExpr parses the expression ParseSpec is left with once it has
// taken off a time-zone prefix and handled "@every": a descriptor or five
// fields (minute hour day-of-month month day-of-week), optionally preceded by
// a seconds field. This is the language robfig/cron v3 accepted with
// SecondOptional|Minute|Hour|Dom|Month|Dow|Descriptor, including its
// leniencies (names in any case, leading zeros and a leading "+", empty list
// items as in "1,,2", "N/step" meaning N-max/step, "?" anywhere as "*", steps
// larger than the range), with one deliberate difference: robfig read
// "*-5" or "*-junk" as "*", ignoring the rest; that is refused here. An
// expression that matches no date at all is refused too.
func parseCronExpr(body string) (*cronExpr, error) {
	if strings.HasPrefix(body, "@") {
		return parseCronDescriptor(body)
	}
	fields := strings.Fields(body)
	if n := len(fields); n < 5 || n > 6 {
		return nil, fmt.Errorf("expected 5 to 6 fields, found %d (minute hour day-of-month month day-of-week, optionally preceded by second)", n)
	}
	if len(fields) == 5 {
		fields = append([]string{"0"}, fields...)
	}
	var c cronExpr
	var minuteWild, hourWild bool
	var err error
	if c.second, _, _, err = parseCronField(secondField, fields[0]); err != nil {
		return nil, err
	}
	if c.minute, _, minuteWild, err = parseCronField(minuteField, fields[1]); err != nil {
		return nil, err
	}
	if c.hour, _, hourWild, err = parseCronField(hourField, fields[2]); err != nil {
		return nil, err
	}
	if c.dom, c.domStar, _, err = parseCronField(domField, fields[3]); err != nil {
		return nil, err
	}
	if c.month, _, _, err = parseCronField(monthField, fields[4]); err != nil {
		return nil, err
	}
	if c.dow, c.dowStar, _, err = parseCronField(dowField, fields[5]); err != nil {
		return nil, err
	}
	c.periodic = minuteWild || hourWild
	if err := c.checkSomeDay(fields); err != nil {
		return nil, err
	}
	return &c, nil
}

// parseCronDescriptor reads the descriptors robfig/cron knew, spelt as it
// spelt them (lower case).
func parseCronDescriptor(d string) (*cronExpr, error) {
	all := func(f cronField) uint64 { return rangeBits(f.min, f.max, 1) }
	c := &cronExpr{second: 1, minute: 1, hour: 1, dom: all(domField), month: all(monthField), dow: all(dowField), domStar: true, dowStar: true}
	switch d {
	case "@yearly", "@annually":
		c.dom, c.domStar, c.month = 1<<1, false, 1<<1
	case "@monthly":
		c.dom, c.domStar = 1<<1, false
	case "@weekly":
		c.dow, c.dowStar = 1<<0, false
	case "@daily", "@midnight":
	case "@hourly":
		c.hour, c.periodic = all(hourField), true
	default:
		return nil, fmt.Errorf("unrecognized descriptor %q: want @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or @every <duration>", d)
	}
	return c, nil
}

// parseCronField parses one field: a comma-separated list of items. star
// reports an item "*" or "?" with no step above 1 (the day rule), wild an
// item starting with "*" or "?" whatever its step (periodic). Empty items
// are ignored, as robfig/cron did, so a field of commas is an empty set,
// which checkSomeDay refuses unless it is one of the two day fields and the
// other one matches on its own.
func parseCronField(f cronField, text string) (set uint64, star, wild bool, err error) {
	items := strings.FieldsFunc(text, func(r rune) bool { return r == ',' })
	for _, item := range items {
		b, s, w, err := parseCronItem(f, item)
		if err != nil {
			return 0, false, false, fmt.Errorf("%s field %q: %v; allowed: %s", f.name, text, err, f.allowed)
		}
		set, star, wild = set|b, star || s, wild || w
	}
	return set, star, wild, nil
}

// parseCronItem parses "*", "?", a value, a range lo-hi, each optionally
// followed by /step; "v/step" is v-max/step.
func parseCronItem(f cronField, item string) (set uint64, star, wild bool, err error) {
	rangeText, stepText, hasStep := strings.Cut(item, "/")
	if strings.Contains(stepText, "/") {
		return 0, false, false, fmt.Errorf("%q has more than one \"/\"", item)
	}
	lo, hi := f.min, f.max
	if rangeText == "*" || rangeText == "?" {
		star, wild = true, true
	} else if strings.HasPrefix(rangeText, "*-") || strings.HasPrefix(rangeText, "?-") {
		return 0, false, false, fmt.Errorf("a range cannot start with %q; write %q alone or a range of values", rangeText[:1], rangeText[:1])
	} else {
		loText, hiText, isRange := strings.Cut(rangeText, "-")
		if strings.Contains(hiText, "-") {
			return 0, false, false, fmt.Errorf("%q has more than one \"-\"", item)
		}
		if lo, err = f.value(loText); err != nil {
			return 0, false, false, err
		}
		switch {
		case isRange:
			if hi, err = f.value(hiText); err != nil {
				return 0, false, false, err
			}
		case !hasStep:
			hi = lo
		}
	}
	step := 1
	if hasStep {
		// strconv.Atoi, as robfig/cron: decimal digits, an optional "+".
		n, err := strconv.Atoi(stepText)
		if err != nil || n < 1 {
			return 0, false, false, fmt.Errorf("step %q in %q is not a positive whole number", stepText, item)
		}
		step = n
		if step > 1 {
			star = false
		}
	}
	switch {
	case lo < f.min:
		return 0, false, false, fmt.Errorf("%d is below minimum (%d)", lo, f.min)
	case lo > f.max || hi > f.max:
		return 0, false, false, fmt.Errorf("%d is above maximum (%d)", max(lo, hi), f.max)
	case lo > hi:
		return 0, false, false, fmt.Errorf("range %q starts after it ends (%d > %d)", rangeText, lo, hi)
	}
	return rangeBits(lo, hi, step), star, wild, nil
}

// value parses a number (strconv.Atoi, as robfig/cron did: decimal digits
// with an optional "+") or, in the month and day-of-week fields, a name in
// any case.
func (f cronField) value(text string) (int, error) {
	if v, ok := f.names[strings.ToLower(text)]; ok {
		return v, nil
	}
	n, err := strconv.Atoi(text)
	if err != nil {
		if text == "" {
			return 0, fmt.Errorf("a value is missing")
		}
		if f.names != nil {
			return 0, fmt.Errorf("%q is neither a number nor a %s name", text, f.name)
		}
		return 0, fmt.Errorf("%q is not a number", text)
	}
	return n, nil // a negative n cannot get here: "-" splits a range
}

// rangeBits is the set lo, lo+step, … up to hi (0 <= lo <= hi <= 63).
func rangeBits(lo, hi, step int) uint64 {
	var set uint64
	for v := lo; v <= hi; v += step {
		set |= 1 << uint(v)
		if step > hi-v {
			break
		}
	}
	return set
}

// maxMonthDays is the longest each month can be (February in leap years).
var maxMonthDays = [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// checkSomeDay refuses an expression that matches no date, so that next
// never searches in vain: a field with no value, or a day-of-month and month
// combination that never occurs (30 February) when the day-of-week field
// does not match on its own. fields are the six field texts.
func (c *cronExpr) checkSomeDay(fields []string) error {
	for i, f := range []cronField{secondField, minuteField, hourField, domField, monthField} {
		if set := []uint64{c.second, c.minute, c.hour, c.dom, c.month}[i]; set == 0 && f.name != domField.name {
			return fmt.Errorf("%s field %q has no value; allowed: %s", f.name, fields[i], f.allowed)
		}
	}
	longest := 0
	for m := 1; m <= 12; m++ {
		if c.month&(1<<uint(m)) != 0 {
			longest = max(longest, maxMonthDays[m])
		}
	}
	domOK := c.dom != 0 && bits.TrailingZeros64(c.dom) <= longest // on some day of some month
	dowOK := c.dow != 0                                           // every month has every weekday
	if c.domStar || c.dowStar {                                   // both must match
		if domOK && dowOK {
			return nil
		}
	} else if domOK || dowOK { // either
		return nil
	}
	switch {
	case c.dow == 0:
		return fmt.Errorf("it matches no date: day-of-week field %q has no value", fields[5])
	case c.dom == 0:
		return fmt.Errorf("it matches no date: day-of-month field %q has no value", fields[3])
	}
	return fmt.Errorf("it matches no date: day-of-month %q never falls in month %q (the longest of those months has %d days)", fields[3], fields[4], longest)
}

// dayMatches applies the day rule (see domStar) to a day of the month and
// its weekday.
func (c *cronExpr) dayMatches(day int, wd time.Weekday) bool {
	domOK := c.dom&(1<<uint(day)) != 0
	dowOK := c.dow&(1<<uint(wd)) != 0
	if c.domStar || c.dowStar {
		return domOK && dowOK
	}
	return domOK || dowOK
}

// matches reports whether the wall-clock time w (read as UTC) matches.
func (c *cronExpr) matches(w time.Time) bool {
	_, mo, d := w.Date()
	h, mi, s := w.Clock()
	return c.month&(1<<uint(mo)) != 0 && c.dayMatches(d, w.Weekday()) &&
		c.hour&(1<<uint(h)) != 0 && c.minute&(1<<uint(mi)) != 0 && c.second&(1<<uint(s)) != 0
}

// Bounds on the work of next.
const (
	// cronSearchYears: next looks this far ahead on the wall clock. An
	// expression ParseSpec accepts matches at least once every eight years
	// (29 February around 2100: 2096, 2104), so "never" only comes from
	// cronMaxYear. robfig/cron gave up after five years, so it found no
	// tick after 2096-02-29 for "0 0 29 2 *".
	cronSearchYears = 10
	// cronMaxYear: there is no tick after the end of year 9999 (wall
	// clock), the last year RFC 3339 and SQL timestamps can hold.
	cronMaxYear = 9999
	// cronMaxSteps bounds nextMatch on top of the year limit: a step moves
	// to the next month, day, hour, minute or second that may match, so a
	// year takes at most about 400 of them.
	cronMaxSteps = 1 << 14
	// cronMaxPeriods bounds the time-zone periods (spans between offset
	// changes) one call walks; real zones have at most a few a year.
	cronMaxPeriods = 1 << 10
	// cronLookBack: how far back the latest wall-clock reading so far is
	// looked for. A zone offset is within ±16h, so no instant more than 32h
	// before s can show a later wall-clock time than s-1s does.
	cronLookBack = 48 * 3600
	// cronProbe: offset changes are found by reading the offset every
	// cronProbe seconds and bisecting where it differs, which finds them
	// all if no two are closer than that. In the tz database the closest
	// are four days apart (Africa/Freetown, 1939). time.Time.ZoneBounds
	// would be simpler but is wrong in some years after the last explicit
	// transition of a zone, where a POSIX rule takes over (golang/go#81583:
	// in leap years it can return an end before the instant).
	cronProbe = 6 * 3600
)

var (
	cronMinUnix = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	cronMaxUnix = time.Date(cronMaxYear+1, 1, 2, 0, 0, 0, 0, time.UTC).Unix()
)

// next is the first tick strictly after t in loc, or the zero time if there
// is none before the end of cronMaxYear. Ticks are whole seconds. It is a pure
// function of the expression, the zone's rules and t, so every replica
// computes the same sequence; its work is bounded (cronMax*).
//
// A tick is a moment the wall clock in loc shows a time the expression
// matches. Away from time-zone transitions that is all there is to it, and
// it is what robfig/cron computed. At a transition a wall-clock time can be
// skipped (spring forward: 02:30 does not exist in New York on the second
// Sunday of March) or shown twice (fall back: 01:30 happens at 05:30Z and
// at 06:30Z on the first Sunday of November). What happens then depends on
// the expression, as in ISC/Vixie cron (cron(8)):
//
//   - A periodic expression (its minute or hour field has a "*" item, such
//     as "*/15 * * * *" or "@hourly") ticks whenever the wall clock shows a
//     matching time, and only then: wall-clock times that are skipped give
//     no tick, and those shown twice give two, an hour apart. Its cadence
//     goes on through the transition, as one would expect of "every 15
//     minutes". Same as robfig/cron.
//   - A fixed-time expression (explicit minute and hour, such as "30 2 * * *"
//     or "@daily") ticks once for each matching wall-clock time, at the first
//     moment the wall clock reaches or passes it. A skipped time ticks at the
//     transition (02:30 at 03:00 EDT, the first moment after the gap; two
//     skipped times give one tick); a time shown twice ticks the first time
//     only (01:30 EDT, not again at 01:30 EST). robfig/cron skipped the
//     first, so a daily job did not run that day, and fired the second
//     twice; both are the known cron complaints, and cron(8) does as we do.
//
// A transition that moves the clock by more than an hour (a zone changing
// its standard offset, Samoa skipping 30 December 2011) follows the same
// rules. Both rules are deterministic; they only depend on the tz database,
// which replicas share as long as they run the same Go release or system
// zoneinfo.
func (c *cronExpr) next(t time.Time, loc *time.Location) time.Time {
	if t.Unix() >= cronMaxUnix {
		return time.Time{}
	}
	s := max(t.Unix(), cronMinUnix) + 1 // Unix rounds down: the first whole second after t
	limit := min(time.Unix(s+offsetAt(s, loc), 0).UTC().Year()+cronSearchYears, cronMaxYear)
	var u int64
	var ok bool
	if c.periodic {
		u, ok = c.nextPeriodic(s, limit, loc)
	} else {
		u, ok = c.nextFixed(s, limit, loc)
	}
	if !ok || u < s { // u < s cannot happen; never go backwards regardless
		return time.Time{}
	}
	return time.Unix(u, 0).UTC()
}

// nextPeriodic is the first instant u >= s at which the wall clock shows a
// matching time. While the offset stays the same the wall clock is
// u+offset, so the first match is the first matching wall-clock time from
// s+offset on, if the offset does not change before it; if it does, the
// search goes on from the change.
func (c *cronExpr) nextPeriodic(s int64, limit int, loc *time.Location) (int64, bool) {
	u := s
	for range cronMaxPeriods {
		off := offsetAt(u, loc)
		w, ok := c.nextMatch(u+off, limit)
		if !ok {
			return 0, false
		}
		change, ok := nextOffsetChange(u, w-off, off, loc)
		if !ok {
			return w - off, true
		}
		u = change
	}
	return 0, false
}

// nextFixed is the first tick u >= s of a fixed-time expression: the moment
// the wall clock first reaches or passes the earliest matching wall-clock
// time not already reached before s.
func (c *cronExpr) nextFixed(s int64, limit int, loc *time.Location) (int64, bool) {
	w, ok := c.nextMatch(wallReached(s, loc), limit)
	if !ok {
		return 0, false
	}
	return firstReaching(w, s, loc), true
}

// wallReached is one second past the latest wall-clock time shown before s:
// s's own wall-clock time, except in the hour after the clock went back,
// when it is the time shown just before it went back.
func wallReached(s int64, loc *time.Location) int64 {
	u := s - 1
	off := offsetAt(u, loc)
	high := u + off
	for range cronMaxPeriods {
		start, ok := offsetStart(u, s-cronLookBack, off, loc)
		if !ok {
			break
		}
		u = start - 1 // the last instant of the period before
		off = offsetAt(u, loc)
		high = max(high, u+off)
	}
	return high + 1
}

// firstReaching is the first instant u >= s at which the wall clock shows w
// or later: when w was skipped, the moment after the gap.
func firstReaching(w, s int64, loc *time.Location) int64 {
	u := s
	for range cronMaxPeriods {
		off := offsetAt(u, loc)
		if u+off >= w {
			return u
		}
		change, ok := nextOffsetChange(u, w-off, off, loc)
		if !ok {
			return w - off
		}
		u = change
	}
	return u
}

// offsetAt is loc's offset from UTC at instant u, in seconds.
func offsetAt(u int64, loc *time.Location) int64 {
	_, off := time.Unix(u, 0).In(loc).Zone()
	return int64(off)
}

// nextOffsetChange is the first instant in (u, v] whose offset is not off,
// the offset at u.
func nextOffsetChange(u, v, off int64, loc *time.Location) (int64, bool) {
	for lo := u; lo < v; {
		hi := min(lo+cronProbe, v)
		if offsetAt(hi, loc) == off {
			lo = hi
			continue
		}
		for hi-lo > 1 { // offset(lo) == off != offset(hi), one change between
			mid := lo + (hi-lo)/2
			if offsetAt(mid, loc) == off {
				lo = mid
			} else {
				hi = mid
			}
		}
		return hi, true
	}
	return 0, false
}

// offsetStart is the first instant of the run of offset off that contains
// u, if it starts after floor.
func offsetStart(u, floor, off int64, loc *time.Location) (int64, bool) {
	for hi := u; hi > floor; {
		lo := max(hi-cronProbe, floor)
		if offsetAt(lo, loc) == off {
			hi = lo
			continue
		}
		for hi-lo > 1 { // offset(lo) != off == offset(hi), one change between
			mid := lo + (hi-lo)/2
			if offsetAt(mid, loc) == off {
				hi = mid
			} else {
				lo = mid
			}
		}
		return hi, true
	}
	return 0, false
}

// nextMatch is the first matching wall-clock time at or after from, both in
// seconds since the epoch of a clock read as UTC, in a year up to limit.
func (c *cronExpr) nextMatch(from int64, limit int) (int64, bool) {
	t := time.Unix(from, 0).UTC()
	for range cronMaxSteps {
		y, mo, d := t.Date()
		if y > limit {
			return 0, false
		}
		if c.month&(1<<uint(mo)) == 0 {
			if m, ok := nextBit(c.month, int(mo)+1, 12); ok {
				t = time.Date(y, time.Month(m), 1, 0, 0, 0, 0, time.UTC)
			} else {
				t = time.Date(y+1, 1, 1, 0, 0, 0, 0, time.UTC)
			}
			continue
		}
		if !c.dayMatches(d, t.Weekday()) {
			t = time.Date(y, mo, d+1, 0, 0, 0, 0, time.UTC)
			continue
		}
		h, mi, s := t.Clock()
		nh, ok := nextBit(c.hour, h, 23)
		if !ok {
			t = time.Date(y, mo, d+1, 0, 0, 0, 0, time.UTC)
			continue
		}
		if nh != h {
			h, mi, s = nh, 0, 0
		}
		nm, ok := nextBit(c.minute, mi, 59)
		if !ok {
			t = time.Date(y, mo, d, h+1, 0, 0, 0, time.UTC)
			continue
		}
		if nm != mi {
			mi, s = nm, 0
		}
		ns, ok := nextBit(c.second, s, 59)
		if !ok {
			t = time.Date(y, mo, d, h, mi+1, 0, 0, time.UTC)
			continue
		}
		return time.Date(y, mo, d, h, mi, ns, 0, time.UTC).Unix(), true
	}
	return 0, false
}

// nextBit is the smallest value v in set with from <= v <= max.
func nextBit(set uint64, from, max int) (int, bool) {
	if from > max {
		return 0, false
	}
	rest := set &^ (1<<uint(from) - 1)
	if rest == 0 {
		return 0, false
	}
	if v := bits.TrailingZeros64(rest); v <= max {
		return v, true
	}
	return 0, false
}
