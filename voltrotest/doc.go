// Package voltrotest runs an App in a test, on the memory store (or a
// SQLite file) with a virtual clock: durable sleeps, signal timeouts, retry backoff and cron
// ticks take no wall time.
//
//	func TestOrder(t *testing.T) {
//		env := voltrotest.New(t, order, payment) // registered, started, closed at the end
//		h, _ := order.Start(t.Context(), env.App(), in)
//		env.WaitFor(h.ID, voltrotest.AwaitingSignal("shipped"))
//		env.App().Signal(t.Context(), h.ID, "shipped", true)
//		receipt, err := h.Result(t.Context()) // the 7-day sleep after it passes at once
//	}
//
// Time moves only when nothing can run without it: no handler or step in
// flight (one waiting out its retry backoff on the clock does not count),
// no message deliverable now, no schedule firing. Then it jumps to the
// next thing due (a message's delivery time, a backoff, a cron tick) and
// no further. It does so by itself while a caller waits for an outcome
// (Handle.Result, Workflow.Run, Entity.Request, Env.WaitFor), and up to a
// point with Env.Advance. A test that only starts a run and looks at it
// later sees time stand still, so a signal sent before waiting is never
// beaten by its own timeout.
//
// Code inside steps and handlers that calls time.Now or time.Sleep sees the
// wall clock; a step that blocks holds the clock until it returns.
//
// NewSQLite is New on a SQLite file in t.TempDir(), for code that writes
// its own rows and starts runs in the same transaction (Workflow.StartTx,
// Entity.SendTx on a transaction of App.DB()); the store reads the same
// virtual clock, and time skips as on the memory store. Its test imports
// the driver: import _ "github.com/voltro/voltro/driver/sqlite".
//
// The App's logs are kept in memory and printed through t.Log only when
// the test fails. Each Env has its own store and clock: tests using it may
// run in parallel and under the race detector.
//
// For deploys, SaveHistories writes the journals of a test's runs to a
// directory (testdata, under version control) and Replay runs them against
// the code of today, failing the test where a changed workflow no longer
// agrees with what runs in flight have recorded.
package voltrotest
