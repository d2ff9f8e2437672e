// The binlog feed's offsets: the table comes from migration 0500, also on a
// database where an earlier version created it at run time.
package mysql_test

import (
	"testing"

	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/mysql"
	"github.com/voltro/voltro/internal/store/storetest"
	"github.com/voltro/voltro/internal/testdb"
)

// oldOffsetsDDL is what internal/cdc/binlog ran at feed start before
// migration 0500 existed.
const oldOffsetsDDL = `CREATE TABLE IF NOT EXISTS _voltro_cdc_offsets (
		replica_id VARCHAR(191) NOT NULL PRIMARY KEY,
		server_id INT UNSIGNED NOT NULL,
		gtid VARCHAR(2048) NOT NULL,
		schema_version INT NOT NULL DEFAULT 1,
		updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
	)`

func TestBinlogOffsetsUpgrade(t *testing.T) {
	ctx := ctxT(t)
	url := testdb.MariaDB(t, "mycdcup")
	s := open(t, url, quiet)
	db := s.DB()
	if _, err := db.ExecContext(ctx, oldOffsetsDDL); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO _voltro_cdc_offsets (replica_id, server_id, gtid) VALUES ('pod-a', 7, '0-1-42')`); err != nil {
		t.Fatal(err)
	}
	shape := func() string {
		t.Helper()
		var name, ddl string
		if err := db.QueryRowContext(ctx, "SHOW CREATE TABLE _voltro_cdc_offsets").Scan(&name, &ddl); err != nil {
			t.Fatal(err)
		}
		return ddl
	}
	before := shape()
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate over the run-time table: %v", err)
	}
	if after := shape(); after != before {
		t.Errorf("migration changed the table:\n%s\nwas\n%s", after, before)
	}
	off := mysql.BinlogOffsets(db)
	gtid, ok, err := off.LoadOffset(ctx, "pod-a")
	if err != nil || !ok || gtid != "0-1-42" {
		t.Fatalf("old row after migrate: %q %v %v", gtid, ok, err)
	}
	// a feed opened alone applies the same file again: nothing changes
	if err := mysql.PrepareBinlogOffsets(ctx, db); err != nil {
		t.Fatal(err)
	}
	if after := shape(); after != before {
		t.Errorf("prepare changed the table:\n%s", after)
	}

	// on a fresh database the migration makes the table of the run-time shape
	fs, _ := fresh(t, "mycdcnew", quiet)
	var name, ddl string
	if err := fs.DB().QueryRowContext(ctx, "SHOW CREATE TABLE _voltro_cdc_offsets").Scan(&name, &ddl); err != nil {
		t.Fatalf("migrated database has no offsets table: %v", err)
	}
	if ddl != before {
		t.Errorf("migrated shape:\n%s\nrun-time shape:\n%s", ddl, before)
	}
}

func TestBinlogOffsetsMariaDB(t *testing.T) {
	s, _ := fresh(t, "mycdcoff", quiet)
	storetest.BinlogOffsets(t, func(t *testing.T) store.BinlogOffsets { return mysql.BinlogOffsets(s.DB()) })
}

func TestRowSQLMariaDB(t *testing.T) {
	s, _ := fresh(t, "myrowsql", quiet)
	storetest.RowSQL(t, s.DB(), mysql.RowDialect(store.MariaDB))
}

func TestRowSQLMySQLDialect(t *testing.T) {
	s, _ := fresh(t, "myrowsqlm", quiet)
	storetest.RowSQL(t, s.DB(), mysql.RowDialect(store.MySQL))
}
