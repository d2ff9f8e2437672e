// Time values in and out of the SQL dialects: native timestamps on
// PostgreSQL, DATETIME(3) text on MySQL-family servers, sortable UTC text on
// SQLite.
package schedule

import (
	"fmt"
	"time"
)

// textTime is how times are written where the column is DATETIME or TEXT:
// UTC, millisecond precision, sortable as text.
const textTime = "2006-01-02 15:04:05.000"

// nullTime scans any of the forms the drivers hand back.
type nullTime struct {
	T     time.Time
	Valid bool
}

var textLayouts = []string{
	"2006-01-02 15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999 -0700 MST",
	time.RFC3339Nano,
}

func (n *nullTime) Scan(v any) error {
	*n = nullTime{}
	var text string
	switch x := v.(type) {
	case nil:
		return nil
	case time.Time:
		n.T, n.Valid = x.UTC(), true
		return nil
	case string:
		text = x
	case []byte:
		text = string(x)
	default:
		return fmt.Errorf("schedule: cannot read %T as a time", v)
	}
	for _, layout := range textLayouts {
		if t, err := time.Parse(layout, text); err == nil {
			n.T, n.Valid = t.UTC(), true
			return nil
		}
	}
	return fmt.Errorf("schedule: cannot read %q as a time", text)
}
