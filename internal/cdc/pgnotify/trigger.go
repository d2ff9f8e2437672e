package pgnotify

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/voltro/voltro/internal/store/postgres"
	"github.com/voltro/voltro/internal/store/rowsql"
)

// Version of the trigger function; a new payload shape gets a new version
// (and a new channel, so an instance never decodes a shape it does not know).
// Version 1 sent full row images and is removed wherever version 2 installs.
const Version = 2

// Channel is the one NOTIFY channel every voltro trigger of this Version
// publishes on.
const Channel = "voltro_cdc_v2"

// PayloadLimit is the size above which a trigger sends a resync instead of
// the key (NOTIFY refuses payloads of 8000 bytes or more).
const PayloadLimit = 7900

var (
	funcName    = fmt.Sprintf("_voltro_cdc_notify_v%d", Version)
	triggerName = fmt.Sprintf("_voltro_cdc_v%d", Version)
	truncName   = fmt.Sprintf("_voltro_cdc_trunc_v%d", Version)
	// the triggers of earlier versions, dropped on install and removal
	oldTriggers = []string{"_voltro_cdc_v1", "_voltro_cdc_trunc_v1"}
)

// functionSQL publishes a JSON payload per row: table, op and key (from the
// primary-key columns passed as trigger arguments), plus the old key of an
// update that changed it. A key too large for NOTIFY becomes a resync.
// clock_timestamp() keeps two identical changes in one transaction from
// being merged by NOTIFY's de-duplication.
var functionSQL = `CREATE OR REPLACE FUNCTION ` + funcName + `() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
	newj jsonb;
	oldj jsonb;
	keyj jsonb := '{}'::jsonb;
	oldk jsonb := '{}'::jsonb;
	payload text;
	i int;
BEGIN
	IF TG_LEVEL = 'STATEMENT' THEN
		PERFORM pg_notify('` + Channel + `', json_build_object('t', TG_TABLE_NAME, 'op', 'truncate')::text);
		RETURN NULL;
	END IF;
	IF TG_OP <> 'DELETE' THEN newj := to_jsonb(NEW); END IF;
	IF TG_OP <> 'INSERT' THEN oldj := to_jsonb(OLD); END IF;
	FOR i IN 0 .. TG_NARGS - 1 LOOP
		keyj := keyj || jsonb_build_object(TG_ARGV[i], coalesce(newj, oldj) -> TG_ARGV[i]);
		IF TG_OP = 'UPDATE' THEN
			oldk := oldk || jsonb_build_object(TG_ARGV[i], oldj -> TG_ARGV[i]);
		END IF;
	END LOOP;
	IF TG_OP = 'UPDATE' AND oldk IS DISTINCT FROM keyj THEN
		payload := json_build_object('t', TG_TABLE_NAME, 'op', 'update', 'k', keyj, 'ok', oldk,
			'ts', clock_timestamp())::text;
	ELSE
		payload := json_build_object('t', TG_TABLE_NAME, 'op', lower(TG_OP), 'k', keyj,
			'ts', clock_timestamp())::text;
	END IF;
	IF octet_length(payload) > ` + fmt.Sprint(PayloadLimit) + ` THEN
		payload := json_build_object('t', TG_TABLE_NAME, 'op', 'resync')::text;
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
	if err := rowsql.CheckIdent("table", table); err != nil {
		return err
	}
	var have bool
	err := db.QueryRowContext(ctx,
		`SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass($1) AND tgname = $2)
		 AND NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass($1) AND tgname = ANY($4))
		 AND EXISTS (SELECT 1 FROM _voltro_cdc_schema WHERE component = 'pg_notify' AND version >= $3)`,
		`"`+table+`"`, triggerName, Version, oldTriggers).Scan(&have)
	if err == nil && have {
		return nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("install change trigger on %s: %w", table, err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit this is a no-op
	d := postgres.RowDialect
	args := make([]string, len(pk))
	for i, c := range pk {
		args[i] = "'" + strings.ReplaceAll(c, "'", "''") + "'"
	}
	stmts := []string{
		`SELECT pg_advisory_xact_lock(hashtext('voltro_cdc_ddl'))`,
		`CREATE TABLE IF NOT EXISTS _voltro_cdc_schema (component text PRIMARY KEY, version int NOT NULL, updated_at timestamptz NOT NULL DEFAULT now())`,
		functionSQL,
		fmt.Sprintf(`DROP TRIGGER IF EXISTS %s ON %s`, oldTriggers[0], d.Quote(table)),
		fmt.Sprintf(`DROP TRIGGER IF EXISTS %s ON %s`, oldTriggers[1], d.Quote(table)),
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

// Uninstall removes the change triggers (of every version) from table; the
// trigger function stays, it reveals nothing. A table that no longer exists
// is no error. The caller makes sure no instance still subscribes.
func Uninstall(ctx context.Context, db *sql.DB, table string) error {
	if err := rowsql.CheckIdent("table", table); err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("remove change trigger from %s: %w", table, err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit this is a no-op
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('voltro_cdc_ddl'))`); err != nil {
		return fmt.Errorf("remove change trigger from %s: %w", table, err)
	}
	var exists bool
	if err := tx.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, `"`+table+`"`).Scan(&exists); err != nil {
		return fmt.Errorf("remove change trigger from %s: %w", table, err)
	}
	if !exists {
		return nil
	}
	d := postgres.RowDialect
	for _, name := range append([]string{triggerName, truncName}, oldTriggers...) {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`DROP TRIGGER IF EXISTS %s ON %s`, name, d.Quote(table))); err != nil {
			return fmt.Errorf("remove change trigger from %s: %w", table, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("remove change trigger from %s: %w", table, err)
	}
	return nil
}

// Triggers lists the voltro change triggers (of any version) on table, for
// tests and diagnostics.
func Triggers(ctx context.Context, db *sql.DB, table string) ([]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT tgname FROM pg_trigger WHERE tgrelid = to_regclass($1) AND tgname LIKE '\_voltro\_cdc\_%' ORDER BY tgname`, `"`+table+`"`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}
