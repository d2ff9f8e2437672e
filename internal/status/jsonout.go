// The JSON form: the Report as is, indented (docs/cluster-status.schema.json).

package status

import (
	"encoding/json"
	"fmt"
	"io"
)

// WriteJSON renders r as JSON.
func WriteJSON(w io.Writer, r *Report) error {
	if r.Duplicates == nil { // documented as always an array
		c := *r
		c.Duplicates = []Duplicate{}
		r = &c
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("cluster status: writing JSON: %w", err)
	}
	return nil
}
