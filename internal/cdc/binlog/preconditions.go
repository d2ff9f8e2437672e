// Boot-time checks of what a binlog reader needs from the server and from
// the replication user, each missing item named.

package binlog

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
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

// Check asks the server, through a connection of the replication user, for
// the binlog settings and the user's grants.
func Check(ctx context.Context, db *sql.DB) (Server, error) {
	var (
		s                                         Server
		logBin, strict                            int64
		format, image, metadata, version, curUser string
		serverID                                  int64
	)
	err := db.QueryRowContext(ctx, `SELECT @@log_bin, @@binlog_format, @@binlog_row_image,
		@@binlog_row_metadata, @@gtid_strict_mode, @@server_id, VERSION(), CURRENT_USER()`).
		Scan(&logBin, &format, &image, &metadata, &strict, &serverID, &version, &curUser)
	if err != nil {
		return s, fmt.Errorf("read binlog settings: %w", err)
	}
	s.ServerID, s.Version = uint32(serverID), version
	if !strings.Contains(version, "MariaDB") {
		s.Missing = append(s.Missing, fmt.Sprintf("a MariaDB server (server is %s)", version))
	}
	if logBin != 1 {
		s.Missing = append(s.Missing, "log_bin=ON (binary log is off)")
	}
	want := func(name, have, wantVal string) {
		if !strings.EqualFold(have, wantVal) {
			s.Missing = append(s.Missing, fmt.Sprintf("%s=%s (server has %s)", name, wantVal, have))
		}
	}
	want("binlog_format", format, "ROW")
	want("binlog_row_image", image, "FULL")
	want("binlog_row_metadata", metadata, "FULL")
	if strict != 1 {
		s.Missing = append(s.Missing, "gtid_strict_mode=ON (server has OFF)")
	}
	grants, err := userGrants(ctx, db)
	if err != nil {
		return s, err
	}
	for _, g := range missingGrants(grants) {
		s.Missing = append(s.Missing, fmt.Sprintf("grant %s ON *.* TO %s", g, curUser))
	}
	return s, nil
}

func userGrants(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, "SHOW GRANTS")
	if err != nil {
		return nil, fmt.Errorf("read replication grants: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			return nil, fmt.Errorf("read replication grants: %w", err)
		}
		out = append(out, strings.ToUpper(g))
	}
	return out, rows.Err()
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
