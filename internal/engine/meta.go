package engine

import (
	"encoding/json"

	"github.com/voltro/voltro/internal/registry"
)

// PublishInputSchema puts the JSON Schema of entityType's input into this
// instance's runner row (Meta inputs), or takes it out for a nil schema.
// Call it before Register of the type, so the row that first names the
// type carries its schema.
func (e *Engine) PublishInputSchema(entityType string, schema json.RawMessage) {
	e.runner.UpdateMeta(func(s string) string {
		m := registry.ParseMeta(s)
		if schema == nil {
			delete(m.Inputs, entityType)
		} else {
			if m.Inputs == nil {
				m.Inputs = map[string]json.RawMessage{}
			}
			m.Inputs[entityType] = schema
		}
		return m.Encode()
	})
}
