// The PostgreSQL change feed grants nothing: a role denied SELECT learns no
// column of a row by listening, a forged NOTIFY produces no event, and the
// triggers go when the last subscriber does (also `voltro watch` on Ctrl-C).
package cdc

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voltro/voltro/internal/cdc/delta"
	"github.com/voltro/voltro/internal/cdc/pgnotify"
	"github.com/voltro/voltro/internal/testdb"
)

const usersDDL = `CREATE TABLE users (id bigserial PRIMARY KEY, name text NOT NULL, pw_hash text NOT NULL)`

// spy connects to the database of dbURL as a fresh login role with no
// privilege on any table.
func spy(t *testing.T, f *Feed, dbURL, role string) *pgx.Conn {
	t.Helper()
	mustExec(t, f, `DROP ROLE IF EXISTS `+role, `CREATE ROLE `+role+` LOGIN`, `REVOKE ALL ON users FROM `+role)
	t.Cleanup(func() { _, _ = f.DB().Exec(`DROP ROLE IF EXISTS ` + role) })
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	if _, err := conn.Exec(ctx, `SELECT pw_hash FROM users`); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("the spy role can read users: %v", err)
	}
	return conn
}

func TestPostgresFeedRevealsNoRowToAListener(t *testing.T) {
	url := testdb.Postgres(t, "cdcspy")
	f := open(t, Config{URL: url, ReplicaID: "app"})
	mustExec(t, f, usersDDL)
	ch := subscribe(t, f, "users", nil)
	s := spy(t, f, url, "voltro_t_spy_listen")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, c := range []string{pgnotify.Channel, "voltro_cdc"} {
		if _, err := s.Exec(ctx, "LISTEN "+c); err != nil {
			t.Fatal(err)
		}
	}
	row, err := f.Insert(ctx, "users", delta.Row{"name": "alice-name", "pw_hash": "argon2-SECRET"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Update(ctx, "users", delta.Row{"id": id(row)}, delta.Row{"pw_hash": "argon2-ROTATED"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Delete(ctx, "users", delta.Row{"id": id(row)}); err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"insert", "update", "delete"} {
		n, err := s.WaitForNotification(ctx)
		if err != nil {
			t.Fatalf("spy got no %s notification: %v", op, err)
		}
		if strings.Contains(n.Payload, "SECRET") || strings.Contains(n.Payload, "ROTATED") || strings.Contains(n.Payload, "alice") {
			t.Fatalf("payload reveals row data: %s", n.Payload)
		}
		var p map[string]any
		if err := json.Unmarshal([]byte(n.Payload), &p); err != nil {
			t.Fatal(err)
		}
		k, _ := p["k"].(map[string]any)
		if p["op"] != op || len(k) != 1 || k["id"] == nil || len(p) != 4 { // t, op, k, ts
			t.Fatalf("%s payload %s: want table, op, key and timestamp only", op, n.Payload)
		}
	}
	// the application itself still reads full rows, with its privileges:
	// each insert/update it gets was re-read (or dropped, once the row was
	// gone), and the delete comes with its key only
	d := waitFor(t, ch, 5*time.Second, func(d delta.Delta) bool {
		if d.Op != delta.Delete && d.Row["name"] != "alice-name" {
			t.Fatalf("app delta %+v", d)
		}
		return d.Op == delta.Delete
	})
	if id(d.Key) != id(row) || d.Row != nil || d.Old != nil {
		t.Fatalf("delete delta %+v", d)
	}
}

// Whatever an unprivileged role sends on the channel, the subscriber sees
// only what the database confirms: after forgeries that contradict it (a
// delete of a live row, changes of rows that do not exist, a bogus key) the
// first event is the real write that follows them.
func TestPostgresForgedNotifyProducesNoEvent(t *testing.T) {
	url := testdb.Postgres(t, "cdcforge")
	f := open(t, Config{URL: url, ReplicaID: "app"})
	mustExec(t, f, usersDDL)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	real, err := f.Insert(ctx, "users", delta.Row{"name": "bob", "pw_hash": "h"})
	if err != nil {
		t.Fatal(err)
	}
	ch := subscribe(t, f, "users", nil)
	s := spy(t, f, url, "voltro_t_spy_forge")
	rid := json.Number(strings.TrimSpace(delta.Text(id(real))))
	forged := []string{
		// a delete of a row that exists
		`{"t":"users","op":"delete","k":{"id":` + string(rid) + `}}`,
		// an insert and an update, with a row image, of rows that do not exist
		`{"t":"users","op":"insert","k":{"id":424242},"r":{"id":424242,"name":"mallory","pw_hash":"x"}}`,
		`{"t":"users","op":"update","k":{"id":434343},"r":{"id":434343,"name":"mallory"}}`,
		// a key-changing update whose old key still exists
		`{"t":"users","op":"update","k":{"id":444444},"ok":{"id":` + string(rid) + `}}`,
		// a "key" that is not the primary key: refused unread
		`{"t":"users","op":"update","k":{"pw_hash":"h"}}`,
		// the version 1 shape, and garbage
		`{"t":"users","op":"insert","k":{"id":454545},"r":{"id":454545},"big":true,"ts":"2020-01-01"}`,
		`not json`,
	}
	for _, p := range forged {
		if _, err := s.Exec(ctx, `SELECT pg_notify($1, $2)`, pgnotify.Channel, p); err != nil {
			t.Fatal(err)
		}
	}
	// notifications are delivered in commit order: the forgeries are
	// handled before this
	if _, err := f.Insert(ctx, "users", delta.Row{"name": "carol", "pw_hash": "h2"}); err != nil {
		t.Fatal(err)
	}
	d := next(t, ch, 5*time.Second)
	if d.Op != delta.Insert || d.Row["name"] != "carol" {
		t.Fatalf("a forged notification produced %+v", d)
	}
	quiet(t, ch, 200*time.Millisecond)

	// the remaining limit: a forgery naming a row that exists is re-read,
	// so it yields the row as committed, never the forger's image
	if _, err := s.Exec(ctx, `SELECT pg_notify($1, $2)`, pgnotify.Channel,
		`{"t":"users","op":"update","k":{"id":`+string(rid)+`},"r":{"id":`+string(rid)+`,"name":"mallory"}}`); err != nil {
		t.Fatal(err)
	}
	if d := next(t, ch, 5*time.Second); d.Op != delta.Update || d.Row["name"] != "bob" || d.Row["pw_hash"] != "h" {
		t.Fatalf("forged update of an existing row: %+v", d)
	}
}

func triggers(t *testing.T, f *Feed, table string) []string {
	t.Helper()
	names, err := pgnotify.Triggers(context.Background(), f.DB(), table)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// waitTriggers polls until table has want triggers (0 or 2).
func waitTriggers(t *testing.T, f *Feed, table string, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := triggers(t, f, table)
		if len(got) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has triggers %v, want %d", table, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The trigger stays while any instance subscribes and goes with the last
// subscription; Close removes a lingering one at once.
func TestPostgresTriggersFollowSubscriptions(t *testing.T) {
	url := testdb.Postgres(t, "cdctrig")
	a := open(t, Config{URL: url, ReplicaID: "a", TriggerLinger: -1})
	b := open(t, Config{URL: url, ReplicaID: "b", TriggerLinger: -1})
	mustExec(t, a, itemsDDL(a.Dialect(), "items"))
	actx, acancel := context.WithCancel(context.Background())
	if _, err := a.Subscribe(actx, "items", nil); err != nil {
		t.Fatal(err)
	}
	bctx, bcancel := context.WithCancel(context.Background())
	bch, err := b.Subscribe(bctx, "items", nil)
	if err != nil {
		t.Fatal(err)
	}
	waitTriggers(t, a, "items", 2)
	acancel()
	time.Sleep(200 * time.Millisecond)
	if len(triggers(t, a, "items")) != 2 {
		t.Fatal("trigger removed while instance b still subscribes")
	}
	if _, err := a.Insert(context.Background(), "items", delta.Row{"name": "still seen"}); err != nil {
		t.Fatal(err)
	}
	if d := next(t, bch, 5*time.Second); d.Row["name"] != "still seen" {
		t.Fatalf("b got %+v", d)
	}
	bcancel()
	waitTriggers(t, a, "items", 0)

	// subscribing again installs it again; Close does not wait for the linger
	c := open(t, Config{URL: url, ReplicaID: "c"})
	ch := subscribe(t, c, "items", nil)
	waitTriggers(t, c, "items", 2)
	if _, err := a.Insert(context.Background(), "items", delta.Row{"name": "again"}); err != nil {
		t.Fatal(err)
	}
	if d := next(t, ch, 5*time.Second); d.Row["name"] != "again" {
		t.Fatalf("c got %+v", d)
	}
	_ = c.Close()
	waitTriggers(t, a, "items", 0)
}

// `voltro watch` interrupted with SIGINT (a Ctrl-C) leaves no trigger.
func TestWatchInterruptedLeavesNoTrigger(t *testing.T) {
	url := testdb.Postgres(t, "cdcwatchint")
	a := open(t, Config{URL: url, ReplicaID: "a"})
	mustExec(t, a, itemsDDL(a.Dialect(), "items"))
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWatch$")
	cmd.Env = append(os.Environ(), "VOLTRO_CDC_HELPER=watch", "DB_URL="+url)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitTriggers(t, a, "items", 2)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("watch: %v\n%s", err, out.String())
	}
	if got := triggers(t, a, "items"); len(got) != 0 {
		t.Fatalf("watch left triggers %v behind\n%s", got, out.String())
	}
}

// TestHelperWatch is `voltro watch items` in its own process, stopped by
// SIGINT the way cmd/voltro stops it.
func TestHelperWatch(t *testing.T) {
	if os.Getenv("VOLTRO_CDC_HELPER") != "watch" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := WatchConfig(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if err := Watch(ctx, cfg, "items", nil, func(delta.Delta) error { return nil }); err != nil {
		t.Fatal(err)
	}
}

// An update that changes the primary key reaches a keyed view as the delete
// of the old key and the row under the new one.
func TestPostgresKeyChange(t *testing.T) {
	url := testdb.Postgres(t, "cdckeychg")
	f := open(t, Config{URL: url, ReplicaID: "app"})
	mustExec(t, f, itemsDDL(f.Dialect(), "items"), `INSERT INTO items (id, name) VALUES (1, 'x')`)
	ch := subscribe(t, f, "items", nil)
	mustExec(t, f, `UPDATE items SET id = 2 WHERE id = 1`)
	if d := next(t, ch, 5*time.Second); d.Op != delta.Delete || id(d.Key) != 1 {
		t.Fatalf("want the delete of key 1, got %+v", d)
	}
	if d := next(t, ch, 5*time.Second); d.Op != delta.Update || id(d.Key) != 2 || d.Row["name"] != "x" {
		t.Fatalf("want the row under key 2, got %+v", d)
	}
}
