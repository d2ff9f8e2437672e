// Package pgnotify is the PostgreSQL change feed: row triggers on subscribed
// tables publish each change with pg_notify on one channel, and a dedicated
// listening connection turns the notifications back into deltas.
package pgnotify

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/voltro/voltro/internal/cdc/sqlwrite"
	"github.com/voltro/voltro/internal/store"
)

// Channel is the one NOTIFY channel every voltro trigger publishes on.
const Channel = "voltro_cdc"

// Version of the trigger function; a new payload shape gets a new version so
// old and new instances can run side by side during a rollout.
const Version = 1

// PayloadLimit is the size above which a trigger sends the key only (NOTIFY
// refuses payloads of 8000 bytes or more).
const PayloadLimit = 7900

var (
	funcName    = fmt.Sprintf("_voltro_cdc_notify_v%d", Version)
	triggerName = fmt.Sprintf("_voltro_cdc_v%d", Version)
	truncName   = fmt.Sprintf("_voltro_cdc_trunc_v%d", Version)
)

// functionSQL publishes a JSON payload per row: table, op, key (from the
// primary-key columns passed as trigger arguments), new and old row. An
// oversized payload is replaced by one with the key and "big": the listener
// re-reads the row. clock_timestamp() keeps two identical changes in one
// transaction from being merged by NOTIFY's de-duplication.
var functionSQL = `CREATE OR REPLACE FUNCTION ` + funcName + `() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
	newj jsonb;
	oldj jsonb;
	keyj jsonb := '{}'::jsonb;
	src jsonb;
	payload text;
	i int;
BEGIN
	IF TG_LEVEL = 'STATEMENT' THEN
		PERFORM pg_notify('` + Channel + `', json_build_object('t', TG_TABLE_NAME, 'op', 'truncate')::text);
		RETURN NULL;
	END IF;
	IF TG_OP <> 'DELETE' THEN newj := to_jsonb(NEW); END IF;
	IF TG_OP <> 'INSERT' THEN oldj := to_jsonb(OLD); END IF;
	src := coalesce(newj, oldj);
	FOR i IN 0 .. TG_NARGS - 1 LOOP
		keyj := keyj || jsonb_build_object(TG_ARGV[i], src -> TG_ARGV[i]);
	END LOOP;
	payload := json_build_object('t', TG_TABLE_NAME, 'op', lower(TG_OP), 'k', keyj,
		'r', newj, 'o', oldj, 'ts', clock_timestamp())::text;
	IF octet_length(payload) > ` + fmt.Sprint(PayloadLimit) + ` THEN
		payload := json_build_object('t', TG_TABLE_NAME, 'op', lower(TG_OP), 'k', keyj,
			'big', true, 'ts', clock_timestamp())::text;
	END IF;
	PERFORM pg_notify('` + Channel + `', payload);
	RETURN NULL;
END
$fn$`

// Install makes sure table publishes its changes: the versioned trigger
// function, the row trigger and the truncate trigger. It is idempotent and
// safe to run from many instances at once (DDL is serialized by an advisory
// transaction lock). pk lists the primary-key columns.
func Install(ctx context.Context, db *sql.DB, table string, pk []string) error {
	if err := sqlwrite.CheckIdent("table", table); err != nil {
		return err
	}
	var have bool
	err := db.QueryRowContext(ctx,
		`SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass($1) AND tgname = $2)
		 AND EXISTS (SELECT 1 FROM _voltro_cdc_schema WHERE component = 'pg_notify' AND version >= $3)`,
		`"`+table+`"`, triggerName, Version).Scan(&have)
	if err == nil && have {
		return nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("install change trigger on %s: %w", table, err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit this is a no-op
	d := sqlwrite.Dialect{Name: store.Postgres}
	args := make([]string, len(pk))
	for i, c := range pk {
		args[i] = "'" + strings.ReplaceAll(c, "'", "''") + "'"
	}
	stmts := []string{
		`SELECT pg_advisory_xact_lock(hashtext('voltro_cdc_ddl'))`,
		`CREATE TABLE IF NOT EXISTS _voltro_cdc_schema (component text PRIMARY KEY, version int NOT NULL, updated_at timestamptz NOT NULL DEFAULT now())`,
		functionSQL,
		fmt.Sprintf(`CREATE OR REPLACE TRIGGER %s AFTER INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW EXECUTE FUNCTION %s(%s)`,
			triggerName, d.Quote(table), funcName, strings.Join(args, ", ")),
		fmt.Sprintf(`CREATE OR REPLACE TRIGGER %s AFTER TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION %s()`,
			truncName, d.Quote(table), funcName),
		fmt.Sprintf(`INSERT INTO _voltro_cdc_schema (component, version) VALUES ('pg_notify', %d)
			ON CONFLICT (component) DO UPDATE SET version = GREATEST(_voltro_cdc_schema.version, EXCLUDED.version), updated_at = now()`, Version),
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("install change trigger on %s: %w", table, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("install change trigger on %s: %w", table, err)
	}
	return nil
}
