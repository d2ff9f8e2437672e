package dashboard_test

// The Messages, Schedules and Logs panels follow changes made outside the
// dashboard's process without a reload (the page re-reads when its stream
// says the panel's answer changed), with how long each took.

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// newest is the JavaScript for the newest time (ms since the epoch) in
// column col of the rows of table id whose text holds has, 0 for none.
func newest(id string, col int, has string) string {
	return fmt.Sprintf(`Math.max(0, ...[...document.querySelectorAll("#%s tbody tr")].filter(r => r.textContent.includes(%s)).map(r => Date.parse(r.children[%d].textContent.replace(" ", "T") + "Z")).filter(n => !isNaN(n)))`, id, q(has), col)
}

func testLivePanels(t *testing.T, ctx context.Context, c *cluster) {
	t.Run("Messages", func(t *testing.T) {
		hash(t, ctx, "#/messages")
		truthy(t, ctx, "the Messages panel streaming its topic", `document.querySelector("#main").dataset.panel === "messages" && document.querySelector("#live").dataset.topic === "messages"`)
		eval(t, ctx, `window.__sameDocument = true; true`, new(bool))
		pending := `(() => { const r = document.querySelector('#backlog-types tr[data-type="workflow/demo.unhosted"]'); return r ? Number(r.children[1].textContent) : 0; })()`
		var before float64
		eval(t, ctx, pending, &before)
		began := time.Now()
		cli(t, c.env, "workflows", "start", "demo.unhosted", "--force")
		returned := time.Now()
		truthy(t, ctx, "the CLI's message in the backlog without a reload", fmt.Sprintf(`%s > %v && window.__sameDocument === true`, pending, before))
		t.Logf("a message enqueued by the CLI showed in the Messages panel %s after the command began (%s after it returned)",
			time.Since(began).Round(time.Millisecond), time.Since(returned).Round(time.Millisecond))
	})
	t.Run("Schedules", func(t *testing.T) {
		hash(t, ctx, "#/schedules")
		truthy(t, ctx, "the Schedules panel with firings, streaming its topic", `document.querySelectorAll("#firings tbody tr").length > 0 && document.querySelector("#live").dataset.topic === "schedules"`)
		eval(t, ctx, `window.__sameDocument = true; true`, new(bool))
		var shown float64
		eval(t, ctx, newest("firings", 1, "demo.tick"), &shown)
		// the demo instances fire demo.tick every second: a later firing,
		// claimed by either instance, must show up on its own
		truthy(t, ctx, "a later demo.tick firing without a reload", fmt.Sprintf(`%s > %v && window.__sameDocument === true`, newest("firings", 1, "demo.tick"), shown))
		var lag float64
		eval(t, ctx, "Date.now() - "+newest("firings", 1, "demo.tick"), &lag)
		t.Logf("a new firing showed in the Schedules panel %s after its scheduled time", time.Duration(lag*float64(time.Millisecond)).Round(time.Millisecond))
	})
	t.Run("Logs", func(t *testing.T) {
		hash(t, ctx, "#/logs")
		truthy(t, ctx, "the Logs panel with records, streaming its topic", `document.querySelectorAll("#log-records tbody tr").length > 0 && document.querySelector("#live").dataset.topic === "logs"`)
		eval(t, ctx, `window.__sameDocument = true; true`, new(bool))
		var shown float64
		eval(t, ctx, newest("log-records", 0, "demo.tick fired"), &shown)
		truthy(t, ctx, "a later instance log record without a reload", fmt.Sprintf(`%s > %v && window.__sameDocument === true`, newest("log-records", 0, "demo.tick fired"), shown))
		var lag float64
		eval(t, ctx, "Date.now() - "+newest("log-records", 0, "demo.tick fired"), &lag)
		t.Logf("an instance's log record showed in the Logs panel %s after it was logged", time.Duration(lag*float64(time.Millisecond)).Round(time.Millisecond))
	})
}
