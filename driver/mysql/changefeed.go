// The change feed's MariaDB binlog reader, registered for the feed.

package mysql

import (
	"context"
	"database/sql"

	"github.com/voltro/voltro/internal/cdc/binlog"
	"github.com/voltro/voltro/internal/cdc/cdcdriver"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/store/mysql"
)

func init() {
	cdcdriver.RegisterBinlog(store.MariaDB, cdcdriver.Binlog{
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
	})
}
