// The runner row's Meta JSON: what a SQL-backed instance publishes about
// itself beyond the row's own columns, for status displays.

package registry

import (
	"encoding/json"
	"strings"
)

// RunnerMeta is the content of store.Runner.Meta. Unknown keys are kept
// out; a missing or malformed Meta reads as the zero value.
type RunnerMeta struct {
	Process string `json:"process,omitempty"` // the registry's process name
	PID     int    `json:"pid,omitempty"`
	Host    string `json:"host,omitempty"` // the machine's hostname
	// Inputs holds, by entity type, the JSON Schema of the input of what
	// this instance hosts, where one could be derived (typed workflows):
	// a start by name checks its input against it.
	Inputs map[string]json.RawMessage `json:"inputs,omitempty"`
}

// Encode is the JSON string to store in store.Runner.Meta.
func (m RunnerMeta) Encode() string {
	b, err := json.Marshal(m)
	if err != nil {
		return ""
	}
	return string(b)
}

// ParseMeta reads a runner row's Meta; anything unreadable is ignored.
func ParseMeta(s string) RunnerMeta {
	var m RunnerMeta
	if strings.TrimSpace(s) == "" {
		return m
	}
	if json.Unmarshal([]byte(s), &m) != nil {
		return RunnerMeta{}
	}
	return m
}
