// Small text helpers shared by the table: durations and empty cells.

package status

import (
	"fmt"
	"time"
)

// human renders a duration the way an operator reads it: 350ms, 4.2s,
// 3m10s, 5m, 2h5m.
func human(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		if s := int(d.Seconds()) % 60; s != 0 {
			return fmt.Sprintf("%dm%ds", int(d.Minutes()), s)
		}
		return fmt.Sprintf("%dm", int(d.Minutes()))
	}
	if m := int(d.Minutes()) % 60; m != 0 {
		return fmt.Sprintf("%dh%dm", int(d.Hours()), m)
	}
	return fmt.Sprintf("%dh", int(d.Hours()))
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// cell is s, or "-" when empty.
func cell(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
