package mysql

import (
	"context"
	"database/sql"
	"log/slog"

	"github.com/voltro/voltro/internal/cdc/binlog"
	"github.com/voltro/voltro/internal/cdc/cdcdriver"
	"github.com/voltro/voltro/internal/dburl"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/mysql"
	"github.com/voltro/voltro/internal/store/open"
	"github.com/voltro/voltro/internal/store/rowsql"
)

func init() {
	open.Register(open.Descriptor{
		Dialects: []store.Dialect{store.MariaDB, store.MySQL},
		Open: func(ctx context.Context, db dburl.Resolved, log *slog.Logger) (store.Driver, error) {
			return mysql.Open(ctx, db.URL, mysql.Options{Dialect: db.Dialect, Logger: log})
		},
		// MariaDB's binlog; MySQL's change feed is inline (no binlog reader).
		Binlog: &cdcdriver.Binlog{
			Check: func(ctx context.Context, db *sql.DB) (uint32, []string, error) {
				got, err := mysql.ReadBinlogServer(ctx, db)
				if err != nil {
					return 0, nil, err
				}
				srv := binlog.Check(got)
				return srv.ServerID, srv.Missing, nil
			},
			ServerID:       binlog.ServerID,
			PrepareOffsets: mysql.PrepareBinlogOffsets,
			Reader: func(c cdcdriver.ReaderConfig) cdcdriver.Reader {
				return &binlog.Reader{
					Host: c.Host, Port: c.Port, User: c.User, Password: c.Password,
					Database:  c.Database,
					ReplicaID: c.ReplicaID,
					ServerID:  c.ServerID,
					Offsets:   mysql.BinlogOffsets(c.DB),
					Logger:    c.Logger,
					OnTx:      c.OnTx,
					OnGap:     c.OnGap,
					SaveEvery: c.SaveEvery,
					Ephemeral: c.Ephemeral,
				}
			},
		},
		Rows: map[store.Dialect]rowsql.Dialect{
			store.MariaDB: mysql.RowDialect(store.MariaDB),
			store.MySQL:   mysql.RowDialect(store.MySQL),
		},
	})
}
