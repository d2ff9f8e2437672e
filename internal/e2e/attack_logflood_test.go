package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltro/voltro/internal/observe"
	"github.com/voltro/voltro/internal/testdb"
)

// A client on loopback floods a runner process's plain runner port with
// calls it refuses, each with a 12 KB path and a 2 KB claimed sender (near
// the header cap): the process logs a few capped lines, and the records its
// log ring held before (what the dashboard's Logs panel and voltro logs
// read) are still there.
func TestRefusedCallFloodLeavesTheLogAlone(t *testing.T) {
	url := testdb.Postgres(t, "logflood")
	p := startProc(t, "flooded", map[string]string{"DB_URL": url})
	ring := func() []observe.Record {
		_, body := get(t, "http://"+p.inspect+"/_voltro/inspect/logs?tail=0&boot=false")
		var recs []observe.Record
		if err := json.Unmarshal([]byte(body), &recs); err != nil {
			t.Fatalf("the log ring: %v: %.200s", err, body)
		}
		return recs
	}
	before := ring()
	if len(before) < 10 {
		t.Fatalf("only %d records in the ring before the flood", len(before))
	}
	lastBefore := before[len(before)-1].Seq

	path := "/_voltro/rpc/" + strings.Repeat("A", 12<<10)
	from := strings.Repeat("B", 2<<10)
	const workers, each = 4, 500
	t0 := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Timeout: 10 * time.Second}
			for range each {
				req, _ := http.NewRequest(http.MethodPost, "http://"+p.addr+path, strings.NewReader("{}"))
				req.Header.Set("X-Voltro-From", from)
				resp, err := c.Do(req)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				codes[resp.StatusCode]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// 6 lines at most per 10 s window the flood lasted: 5, and a count
	windows := int(time.Since(t0)/(10*time.Second)) + 2
	if codes[http.StatusUnauthorized] < workers*each*9/10 {
		t.Fatalf("answers: %v", codes)
	}

	after := ring()
	kept := 0
	for _, rec := range after {
		if rec.Seq <= lastBefore {
			kept++
		}
	}
	refusals, logBytes := 0, 0
	for _, rec := range after {
		if strings.HasPrefix(rec.Msg, "runner rpc: refused") {
			refusals++
			b, _ := json.Marshal(rec)
			logBytes += len(b)
		}
	}
	if kept < len(before) || refusals > 6*windows || logBytes > windows*3<<10 {
		t.Fatalf("after %d refused calls the ring kept %d of its %d records; it holds %d refusal records, %d bytes", workers*each, kept, len(before), refusals, logBytes)
	}
	printed := 0
	for _, rec := range p.logRecords() {
		if strings.HasPrefix(fmt.Sprint(rec["msg"]), "runner rpc: refused") {
			b, _ := json.Marshal(rec)
			printed += len(b)
		}
	}
	if printed > windows*3<<10 {
		t.Fatalf("the process printed %d bytes of refusals", printed)
	}
}
