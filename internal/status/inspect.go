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

	"github.com/voltro/voltro/internal/inspect"
	"github.com/voltro/voltro/internal/inspectclient"
)

// InspectTimeout bounds one instance's answer.
const InspectTimeout = time.Second

// fetchInspect GETs the inspect document of the instance at addr. The
// error says why the instance is unreachable; withheld, when not "", why
// the inspect token was not sent (addr's host is not trusted).
func fetchInspect(ctx context.Context, client *inspectclient.Client, addr string) (doc inspect.Doc, withheld string, err error) {
	if addr == "" {
		return doc, "", fmt.Errorf("no inspect address published")
	}
	ctx, cancel := context.WithTimeout(ctx, InspectTimeout)
	defer cancel()
	target := "http://" + addr + inspect.PathInspect
	resp, withheld, err := client.Get(ctx, addr, inspect.PathInspect)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // it repeats the method and URL
		}
		return doc, withheld, fmt.Errorf("GET %s: %w", target, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return doc, withheld, fmt.Errorf("GET %s: reading the answer: %w", target, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized:
		if withheld != "" {
			return doc, withheld, fmt.Errorf("GET %s: 401: the instance wants the inspect token, which was withheld from this host (token withheld)", target)
		}
		return doc, withheld, fmt.Errorf("GET %s: 401: set VOLTRO_INSPECT_TOKEN to the instances' token", target)
	default:
		return doc, withheld, fmt.Errorf("GET %s: HTTP %d", target, resp.StatusCode)
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return doc, withheld, fmt.Errorf("GET %s: not an inspect document: %w", target, err)
	}
	return doc, withheld, nil
}
