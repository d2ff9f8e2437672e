// Starting the MariaDB binlog reader: preconditions, server_id, offsets, and
// the fallback to inline emit when the server or the user is not ready.

package cdc

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/voltro/voltro/internal/cdc/cdcdriver"
	"github.com/voltro/voltro/internal/cdc/delta"
	"github.com/voltro/voltro/internal/dburl"
	"github.com/voltro/voltro/internal/errs"
	storeopen "github.com/voltro/voltro/internal/store/open"
)

func (f *Feed) startBinlog(ctx context.Context, r dburl.Resolved) error {
	var bl *cdcdriver.Binlog
	if d := storeopen.Of(r.Dialect); d != nil {
		bl = d.Binlog
	}
	if bl == nil {
		return storeopen.Missing(r) // the store would not have opened either
	}
	replURL := f.cfg.ReplicationURL
	if replURL == "" {
		replURL = r.URL
	}
	// The replication connection needs no default database, and a user
	// holding only the replication grants may not use one (error 1044):
	// connect to none, whatever the URL names.
	rr, err := dburl.Resolve(withoutDatabase(replURL), string(r.Dialect))
	if err != nil {
		return err
	}
	conn, err := replicationConn(replURL)
	if err != nil {
		return err
	}
	rdb, err := openDB(ctx, f.sqlw, rr)
	if err != nil {
		return f.fallBack(fmt.Sprintf("replication user cannot connect: %v", err))
	}
	source, missing, err := bl.Check(ctx, rdb)
	_ = rdb.Close()
	if err != nil {
		return f.fallBack(fmt.Sprintf("binlog preconditions could not be checked: %v", err))
	}
	if len(missing) > 0 {
		return f.fallBack("binlog CDC preconditions not met: missing " + strings.Join(missing, "; "))
	}
	f.serverID = bl.ServerID(f.replicaID, source)
	if err := bl.PrepareOffsets(ctx, f.db); err != nil {
		return err
	}
	f.transport = Binlog
	if f.cfg.ReplicaID == "" && !f.cfg.Ephemeral {
		f.log.Warn("POD_NAME is not set: the binlog reader's replica id and server_id change on every restart, and its resume offset is not reused", "server_id", f.serverID)
	}
	rd := bl.Reader(cdcdriver.ReaderConfig{
		Host: conn.host, Port: conn.port, User: conn.user, Password: conn.password,
		Database:  f.database,
		ReplicaID: f.replicaID,
		ServerID:  f.serverID,
		DB:        f.db,
		Logger:    f.log,
		OnTx:      func(ds []delta.Delta) { f.bus.Publish(ds...) },
		OnGap:     f.bus.ResyncAll,
		SaveEvery: 200 * time.Millisecond,
		Ephemeral: f.cfg.Ephemeral,
	})
	f.run, f.runWhat = rd.Run, "binlog stream"
	f.reader = rd
	return nil
}

// withoutDatabase is raw with its path (the database name) removed; raw
// itself when it does not parse.
func withoutDatabase(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Path, u.RawPath = "/", ""
	return u.String()
}

// fallBack switches to inline emit, saying why.
func (f *Feed) fallBack(reason string) error {
	f.transport = Inline
	f.fallback = reason
	f.log.Warn(reason+" — falling back to inline emit: only writes made through this instance reach its subscribers",
		"fallback", reason)
	return nil
}

type replConn struct {
	host           string
	port           uint16
	user, password string
}

// replicationConn takes host, port and credentials from a mariadb:// URL.
func replicationConn(raw string) (replConn, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return replConn{}, errs.Wrap(errs.CodeInvalidConfig, err, "replication URL")
	}
	c := replConn{host: u.Hostname(), port: 3306}
	if c.host == "" {
		c.host = "127.0.0.1"
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return c, errs.New(errs.CodeInvalidConfig, "replication URL port %q", p)
		}
		c.port = uint16(n)
	}
	if u.User != nil {
		c.user = u.User.Username()
		c.password, _ = u.User.Password()
	}
	return c, nil
}
