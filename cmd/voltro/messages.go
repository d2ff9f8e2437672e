package main

// voltro messages: list persisted messages (dead letters first of all),
// dead-letter the backlog of an entity type, and replay a dead letter.

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/voltro/voltro/internal/engine"
	"github.com/voltro/voltro/internal/store"
)

var version = engine.Version

func runMessages(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "list" && args[0] != "replay" && args[0] != "dead") {
		fmt.Fprintln(stderr, "usage: voltro messages list [--state pending|claimed|processed|dead] [--type T] [--id ID] [--limit N] [--format json]")
		fmt.Fprintln(stderr, "       voltro messages dead --type T [--id ID] [--force]")
		fmt.Fprintln(stderr, "       voltro messages replay MESSAGE_ID")
		fmt.Fprintln(stderr, "dead moves the pending messages of entity type T (of entity ID) to dead letters, replayable")
		fmt.Fprintln(stderr, "one by one with replay; it refuses a type a live runner hosts unless --force.")
		if len(args) > 0 && (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
			return errHelp
		}
		return errUsage
	}
	if args[0] == "dead" {
		return messagesDead(ctx, args[1:], env, stdout, stderr)
	}
	if args[0] == "replay" {
		fs := flags("messages replay", "messages replay MESSAGE_ID", stderr)
		if err := parse(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			fs.Usage()
			return errUsage
		}
		id, err := strconv.ParseInt(fs.Arg(0), 10, 64)
		if err != nil {
			return fmt.Errorf("message id %q is not a number", fs.Arg(0))
		}
		d, _, err := openStore(ctx, env, "")
		if err != nil {
			return err
		}
		defer d.Close()
		if err := d.ReplayDead(ctx, id); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "message %d is pending again; its shard owner will deliver it\n", id)
		return nil
	}
	fs := flags("messages list", "messages list [flags]", stderr)
	state := fs.String("state", "", "only this state: pending, claimed, processed, dead")
	typ := fs.String("type", "", "only this entity type")
	id := fs.String("id", "", "only this entity id")
	limit := fs.Int("limit", 100, "at most this many")
	format := fs.String("format", "table", "table or json")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	switch store.MessageState(*state) {
	case "", store.StatePending, store.StateClaimed, store.StateProcessed, store.StateDead:
	default:
		return badArg("--state %q is not a message state: use pending, claimed, processed or dead", *state)
	}
	d, _, err := openStore(ctx, env, "")
	if err != nil {
		return err
	}
	defer d.Close()
	ms, err := d.ListMessages(ctx, store.MessageFilter{State: store.MessageState(*state), EntityType: *typ, EntityID: *id, Limit: *limit})
	if err != nil {
		return err
	}
	if *format == "json" {
		type row struct {
			ID         int64     `json:"id"`
			Shard      string    `json:"shard"`
			EntityType string    `json:"entityType"`
			EntityID   string    `json:"entityId"`
			Tag        string    `json:"tag,omitempty"`
			State      string    `json:"state"`
			Attempts   int       `json:"attempts"`
			LastError  string    `json:"lastError,omitempty"`
			ClaimedBy  string    `json:"claimedBy,omitempty"`
			DeliverAt  time.Time `json:"deliverAt"`
			CreatedAt  time.Time `json:"createdAt"`
		}
		out := make([]row, 0, len(ms))
		for _, m := range ms {
			out = append(out, row{m.ID, m.Shard, m.EntityType, m.EntityID, m.Tag, string(m.State), m.Attempts, m.LastError, m.ClaimedBy, m.DeliverAt, m.CreatedAt})
		}
		return printJSON(stdout, out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTYPE\tENTITY\tSHARD\tSTATE\tATTEMPTS\tLAST ERROR")
	for _, m := range ms {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\n", m.ID, m.EntityType, m.EntityID, m.Shard, m.State, m.Attempts, firstLine(m.LastError, 80))
	}
	return tw.Flush()
}

// messagesDead dead-letters the backlog of one entity type: what waits for
// a type no live runner hosts (a typo at a start, a type a deploy removed).
func messagesDead(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	fs := flags("messages dead", "messages dead --type T [--id ID] [--force]", stderr)
	typ := fs.String("type", "", "the entity type whose pending messages to dead-letter (workflow runs: workflow/NAME)")
	id := fs.String("id", "", "only this entity id")
	force := fs.Bool("force", false, "dead-letter even if a live runner hosts the type")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *typ == "" || fs.NArg() != 0 {
		fs.Usage()
		return errUsage
	}
	d, cfg, err := openStore(ctx, env, "")
	if err != nil {
		return err
	}
	defer d.Close()
	why := fmt.Sprintf("dead-lettered by voltro messages dead --type %s", *typ)
	n, err := store.DeadLetterUnhosted(ctx, d, store.BacklogSelect{EntityType: *typ, EntityID: *id}, 3*cfg.Heartbeat, *force, why)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d pending message(s) of entity type %s dead-lettered; list them with voltro messages list --state dead --type %s, replay one with voltro messages replay ID\n", n, *typ, *typ)
	return nil
}

func firstLine(s string, n int) string {
	for i, c := range s {
		if c == '\n' {
			s = s[:i]
			break
		}
	}
	if len(s) > n {
		return s[:n-1] + "…"
	}
	return s
}
