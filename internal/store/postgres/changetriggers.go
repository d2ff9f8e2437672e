// The PostgreSQL change feed's SQL: row triggers on subscribed tables
// publish the table, operation and primary key of each change with
// pg_notify on one channel (no row image ever goes out: any role that can
// connect may LISTEN), the LISTEN itself, and the session advisory locks
// through which instances learn whether anyone still subscribes to a table.

package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/rowsql"
)

// CDCVersion is the version of the trigger function; a new payload shape
// gets a new version (and a new channel, so an instance never decodes a
// shape it does not know). Version 1 sent full row images and is removed
// wherever version 2 installs.
const CDCVersion = 2

// CDCChannel is the one NOTIFY channel every voltro trigger of this
// version publishes on.
const CDCChannel = "voltro_cdc_v2"

// CDCPayloadLimit is the size above which a trigger sends a resync instead
// of the key (NOTIFY refuses payloads of 8000 bytes or more).
const CDCPayloadLimit = 7900

// cdcSchemaMigration creates _voltro_cdc_schema.
const cdcSchemaMigration = "migrations/0500_cdc_schema.sql"

var (
	cdcFuncName    = fmt.Sprintf("_voltro_cdc_notify_v%d", CDCVersion)
	cdcTriggerName = fmt.Sprintf("_voltro_cdc_v%d", CDCVersion)
	cdcTruncName   = fmt.Sprintf("_voltro_cdc_trunc_v%d", CDCVersion)
	// the triggers of earlier versions, dropped on install and removal
	cdcOldTriggers = []string{"_voltro_cdc_v1", "_voltro_cdc_trunc_v1"}
)

// cdcDDLLock serializes trigger DDL across instances (a transaction lock).
const cdcDDLLock = `SELECT pg_advisory_xact_lock(hashtext('voltro_cdc_ddl'))`

// cdcFunctionSQL publishes a JSON payload per row: table, op and key (from
// the primary-key columns passed as trigger arguments), plus the old key of
// an update that changed it. A key too large for NOTIFY becomes a resync.
// clock_timestamp() keeps two identical changes in one transaction from
// being merged by NOTIFY's de-duplication.
var cdcFunctionSQL = `CREATE OR REPLACE FUNCTION ` + cdcFuncName + `() RETURNS trigger
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
		PERFORM pg_notify('` + CDCChannel + `', json_build_object('t', TG_TABLE_NAME, 'op', 'truncate')::text);
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
	IF octet_length(payload) > ` + fmt.Sprint(CDCPayloadLimit) + ` THEN
		payload := json_build_object('t', TG_TABLE_NAME, 'op', 'resync')::text;
	END IF;
	PERFORM pg_notify('` + CDCChannel + `', payload);
	RETURN NULL;
END
$fn$`

// PrepareChangeTriggers applies migration 0500 on its own when its table
// is missing, for a feed opened on a database the engine's migrations have
// not run on (package changes used alone). Migrate applies it with the rest.
func PrepareChangeTriggers(ctx context.Context, db *sql.DB) error {
	var have bool
	if err := db.QueryRowContext(ctx, `SELECT to_regclass('_voltro_cdc_schema') IS NOT NULL`).Scan(&have); err != nil {
		return wrapErr("look for _voltro_cdc_schema", err)
	}
	if have {
		return nil
	}
	ddl, err := migrations.ReadFile(cdcSchemaMigration)
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return wrapErr("create _voltro_cdc_schema", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit this is a no-op
	if _, err := tx.ExecContext(ctx, string(ddl)); err != nil {
		return wrapErr("create _voltro_cdc_schema", err)
	}
	return wrapErr("create _voltro_cdc_schema", tx.Commit())
}

// InstallChangeTrigger makes sure table publishes its changes: the
// versioned trigger function, the row trigger and the truncate trigger. It
// is idempotent and safe to run from many instances at once (DDL is
// serialized by an advisory transaction lock). pk lists the primary-key
// columns. _voltro_cdc_schema must exist (Migrate, PrepareChangeTriggers).
func InstallChangeTrigger(ctx context.Context, db *sql.DB, table string, pk []string) error {
	if err := rowsql.CheckIdent("table", table); err != nil {
		return err
	}
	var have bool
	err := db.QueryRowContext(ctx,
		`SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass($1) AND tgname = $2)
		 AND NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass($1) AND tgname = ANY($4))
		 AND EXISTS (SELECT 1 FROM _voltro_cdc_schema WHERE component = 'pg_notify' AND version >= $3)`,
		`"`+table+`"`, cdcTriggerName, CDCVersion, cdcOldTriggers).Scan(&have)
	if err == nil && have {
		return nil
	}
	fail := func(err error) error { return fmt.Errorf("install change trigger on %s: %w", table, err) }
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit this is a no-op
	q := RowDialect.Quote(table)
	args := make([]string, len(pk))
	for i, c := range pk {
		args[i] = "'" + strings.ReplaceAll(c, "'", "''") + "'"
	}
	stmts := []string{
		cdcDDLLock,
		cdcFunctionSQL,
		fmt.Sprintf(`DROP TRIGGER IF EXISTS %s ON %s`, cdcOldTriggers[0], q),
		fmt.Sprintf(`DROP TRIGGER IF EXISTS %s ON %s`, cdcOldTriggers[1], q),
		fmt.Sprintf(`CREATE OR REPLACE TRIGGER %s AFTER INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW EXECUTE FUNCTION %s(%s)`,
			cdcTriggerName, q, cdcFuncName, strings.Join(args, ", ")),
		fmt.Sprintf(`CREATE OR REPLACE TRIGGER %s AFTER TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION %s()`,
			cdcTruncName, q, cdcFuncName),
		fmt.Sprintf(`INSERT INTO _voltro_cdc_schema (component, version, updated_at) VALUES ('pg_notify', %d, now())
			ON CONFLICT (component) DO UPDATE SET version = GREATEST(_voltro_cdc_schema.version, EXCLUDED.version), updated_at = now()`, CDCVersion),
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fail(err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	return nil
}

// RemoveChangeTrigger removes the change triggers (of every version) from
// table; the trigger function stays, it reveals nothing. A table that no
// longer exists is no error. The caller makes sure no instance still
// subscribes.
func RemoveChangeTrigger(ctx context.Context, db *sql.DB, table string) error {
	if err := rowsql.CheckIdent("table", table); err != nil {
		return err
	}
	fail := func(err error) error { return fmt.Errorf("remove change trigger from %s: %w", table, err) }
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit this is a no-op
	if _, err := tx.ExecContext(ctx, cdcDDLLock); err != nil {
		return fail(err)
	}
	var exists bool
	if err := tx.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, `"`+table+`"`).Scan(&exists); err != nil {
		return fail(err)
	}
	if !exists {
		return nil
	}
	for _, name := range append([]string{cdcTriggerName, cdcTruncName}, cdcOldTriggers...) {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`DROP TRIGGER IF EXISTS %s ON %s`, name, RowDialect.Quote(table))); err != nil {
			return fail(err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	return nil
}

// ChangeTriggers lists the voltro change triggers (of any version) on
// table, for tests and diagnostics.
func ChangeTriggers(ctx context.Context, db *sql.DB, table string) ([]string, error) {
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

// ListenChanges makes conn listen on CDCChannel.
func ListenChanges(ctx context.Context, conn *pgx.Conn) error {
	_, err := conn.Exec(ctx, "LISTEN "+CDCChannel)
	return err
}

// the advisory lock class of trigger holders (the other key is
// hashtext(table): a collision only keeps a trigger longer)
const subLockSQL = `hashtext('voltro_cdc_subs')`

// OpenSubscriberLocks connects, outside the pool, a session named appName
// that holds the subscription locks of one instance.
func OpenSubscriberLocks(ctx context.Context, dsn, appName string) (store.SubscriberLocks, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = appName
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, cfg)
	if err != nil {
		return nil, err
	}
	return subLocks{conn}, nil
}

type subLocks struct{ c *pgx.Conn }

func (s subLocks) HoldShared(ctx context.Context, table string) error {
	_, err := s.c.Exec(ctx, `SELECT pg_advisory_lock_shared(`+subLockSQL+`, hashtext($1))`, table)
	return err
}

func (s subLocks) ReleaseShared(ctx context.Context, table string) error {
	_, err := s.c.Exec(ctx, `SELECT pg_advisory_unlock_shared(`+subLockSQL+`, hashtext($1))`, table)
	return err
}

func (s subLocks) TryExclusive(ctx context.Context, table string) (bool, error) {
	var alone bool
	err := s.c.QueryRow(ctx, `SELECT pg_try_advisory_lock(`+subLockSQL+`, hashtext($1))`, table).Scan(&alone)
	return alone, err
}

func (s subLocks) ReleaseExclusive(ctx context.Context, table string) error {
	_, err := s.c.Exec(ctx, `SELECT pg_advisory_unlock(`+subLockSQL+`, hashtext($1))`, table)
	return err
}

func (s subLocks) IsClosed() bool { return s.c.IsClosed() }

// Close releases the session's locks, then ends it. The server releases
// them by itself only when the session's backend exits, after the
// connection is gone: another instance asking right after Close could
// still find them held. A session already lost leaves them to that exit.
func (s subLocks) Close(ctx context.Context) error {
	if !s.c.IsClosed() {
		uctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, _ = s.c.Exec(uctx, `SELECT pg_advisory_unlock_all()`)
		cancel()
	}
	return s.c.Close(ctx)
}
