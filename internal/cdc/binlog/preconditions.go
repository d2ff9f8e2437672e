// Boot-time checks of what a binlog reader needs from the server and from
// the replication user, each missing item named.

package binlog

import (
	"fmt"
	"strings"

	"github.com/voltro/voltro/internal/store"
)

// Server is what the checks learned about the source server.
type Server struct {
	ServerID uint32
	Version  string
	// Missing names every unmet precondition, e.g.
	// "binlog_format=ROW (server has MIXED)" or "grant REPLICATION SLAVE".
	Missing []string
}

// OK reports whether the reader can run.
func (s Server) OK() bool { return len(s.Missing) == 0 }

// Check judges what the store read of the server (store/mysql's
// ReadBinlogServer, through a connection of the replication user).
func Check(srv store.BinlogServer) Server {
	s := Server{ServerID: srv.ServerID, Version: srv.Version}
	if !strings.Contains(srv.Version, "MariaDB") {
		s.Missing = append(s.Missing, fmt.Sprintf("a MariaDB server (server is %s)", srv.Version))
	}
	if !srv.LogBin {
		s.Missing = append(s.Missing, "log_bin=ON (binary log is off)")
	}
	want := func(name, have, wantVal string) {
		if !strings.EqualFold(have, wantVal) {
			s.Missing = append(s.Missing, fmt.Sprintf("%s=%s (server has %s)", name, wantVal, have))
		}
	}
	want("binlog_format", srv.Format, "ROW")
	want("binlog_row_image", srv.RowImage, "FULL")
	want("binlog_row_metadata", srv.RowMetadata, "FULL")
	if !srv.GTIDStrict {
		s.Missing = append(s.Missing, "gtid_strict_mode=ON (server has OFF)")
	}
	for _, g := range missingGrants(srv.Grants) {
		s.Missing = append(s.Missing, fmt.Sprintf("grant %s ON *.* TO %s", g, srv.User))
	}
	return s
}

// missingGrants lists the replication privileges no global grant covers.
// REPLICATION CLIENT is called BINLOG MONITOR since MariaDB 10.5.
func missingGrants(grants []string) []string {
	var slave, client bool
	for _, g := range grants {
		if !strings.Contains(g, " ON *.* ") {
			continue
		}
		if strings.Contains(g, "ALL PRIVILEGES") {
			return nil
		}
		slave = slave || strings.Contains(g, "REPLICATION SLAVE") || strings.Contains(g, "REPLICATION REPLICA")
		client = client || strings.Contains(g, "REPLICATION CLIENT") || strings.Contains(g, "BINLOG MONITOR")
	}
	var out []string
	if !slave {
		out = append(out, "REPLICATION SLAVE")
	}
	if !client {
		out = append(out, "REPLICATION CLIENT")
	}
	return out
}
