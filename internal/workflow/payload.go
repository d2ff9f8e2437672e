package workflow

import (
	"encoding/json"

	"github.com/voltro/voltro/internal/errs"
)

// MaxPayloadDepth is how deeply arrays and objects may nest in a workflow
// input or signal payload. Deeper input was accepted and then broke every
// reader that decodes runs (`voltro workflows list --format json` for all
// runs) at encoding/json's own nesting limit.
const MaxPayloadDepth = 64

// checkPayload refuses what is not JSON or nests deeper than MaxPayloadDepth,
// with CodeInvalidArgument; what names the payload in the message.
func checkPayload(what string, b []byte) error {
	if !json.Valid(b) {
		return errs.New(errs.CodeInvalidArgument, "%s is not valid JSON", what)
	}
	if d := payloadDepth(b); d > MaxPayloadDepth {
		return errs.New(errs.CodeInvalidArgument, "%s nests arrays and objects more than %d deep", what, MaxPayloadDepth)
	}
	return nil
}

// payloadDepth is the deepest nesting of arrays and objects in valid JSON b.
func payloadDepth(b []byte) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}
