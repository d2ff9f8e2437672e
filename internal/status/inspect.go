// Asking one instance for its inspect document over HTTP.
package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/voltro/voltro/internal/engine"
)

// InspectTimeout bounds one instance's answer.
const InspectTimeout = time.Second

// fetchInspect GETs the inspect document of the instance at addr. The
// error says why the instance is unreachable.
func fetchInspect(ctx context.Context, client *http.Client, addr, token string) (engine.InspectDoc, error) {
	var doc engine.InspectDoc
	if addr == "" {
		return doc, fmt.Errorf("no inspect address published")
	}
	ctx, cancel := context.WithTimeout(ctx, InspectTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+engine.PathInspect, nil)
	if err != nil {
		return doc, fmt.Errorf("inspect request to %s: %w", addr, err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // it repeats the method and URL
		}
		return doc, fmt.Errorf("GET %s: %w", req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return doc, fmt.Errorf("GET %s: reading the answer: %w", req.URL, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return doc, fmt.Errorf("GET %s: 401: set VOLTRO_INSPECT_TOKEN to the instances' token", req.URL)
	default:
		return doc, fmt.Errorf("GET %s: HTTP %d", req.URL, resp.StatusCode)
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return doc, fmt.Errorf("GET %s: not an inspect document: %w", req.URL, err)
	}
	return doc, nil
}
