// The connection wrapper: it parses the frontend messages a client writes
// and rewrites the SQL text of each statement before it leaves the process.

package sqlclock

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"time"
)

// DialFunc is the dialer signature of pgconn and go-sql-driver/mysql.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Dialer wraps dial so that every connection it makes rewrites the SQL it
// sends for d, reading clock once per statement. The connection must be
// plaintext: TLS would hide the statements (the stores refuse a test clock
// with TLS on).
func Dialer(d Dialect, clock func() time.Time, dial DialFunc) DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &conn{Conn: c, d: d, clock: clock}, nil
	}
}

// conn rewrites the statements in what it writes.
type conn struct {
	net.Conn
	d     Dialect
	clock func() time.Time

	mu      sync.Mutex
	pending []byte // an incomplete message, held until the rest is written
	started bool   // postgres: the untyped startup messages are behind us
}

func (c *conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending = append(c.pending, p...)
	var out []byte
	for {
		n, frame, err := c.next()
		if err != nil {
			return 0, err
		}
		if n == 0 {
			break
		}
		out = append(out, frame...)
		c.pending = c.pending[n:]
	}
	if len(c.pending) == 0 {
		c.pending = nil
	}
	if len(out) > 0 {
		if _, err := c.Conn.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// next returns the length of the first complete message in pending and the
// bytes to send for it, or 0 when pending holds no complete message.
func (c *conn) next() (int, []byte, error) {
	if c.d == MySQL {
		return c.nextMySQL()
	}
	n, frame := c.nextPostgres()
	return n, frame, nil
}

// errTooLarge fails a statement too large for the rewriter to read: it
// would otherwise reach the server with its clock reads unrewritten.
var errTooLarge = errors.New("sqlclock: a statement of 16 MiB or more cannot run under a test clock")

// PostgreSQL: the first messages (SSLRequest, startup, cancel) are untyped,
// int32 length first; every later one is a type byte and an int32 length.
// Query ('Q') holds the SQL; Parse ('P') a statement name, then the SQL.
func (c *conn) nextPostgres() (int, []byte) {
	b := c.pending
	if !c.started {
		if len(b) < 8 {
			return 0, nil
		}
		n := int(binary.BigEndian.Uint32(b))
		if len(b) < n {
			return 0, nil
		}
		switch binary.BigEndian.Uint32(b[4:]) {
		case 80877103, 80877104: // SSLRequest, GSSENCRequest: a startup follows
		default:
			c.started = true
		}
		return n, b[:n]
	}
	if len(b) < 5 {
		return 0, nil
	}
	n := 1 + int(binary.BigEndian.Uint32(b[1:]))
	if len(b) < n {
		return 0, nil
	}
	msg := b[:n]
	body := msg[5:]
	switch msg[0] {
	case 'Q':
		if q, ok := cstring(body); ok {
			return n, pgFrame('Q', append([]byte(Rewrite(Postgres, q, c.clock())), 0))
		}
	case 'P':
		name, ok := cstring(body)
		if !ok {
			break
		}
		rest := body[len(name)+1:]
		q, ok := cstring(rest)
		if !ok {
			break
		}
		nb := append([]byte(name), 0)
		nb = append(nb, Rewrite(Postgres, q, c.clock())...)
		nb = append(nb, 0)
		nb = append(nb, rest[len(q)+1:]...)
		return n, pgFrame('P', nb)
	}
	return n, msg
}

func pgFrame(typ byte, body []byte) []byte {
	f := make([]byte, 5, 5+len(body))
	f[0] = typ
	binary.BigEndian.PutUint32(f[1:], uint32(4+len(body)))
	return append(f, body...)
}

func cstring(b []byte) (string, bool) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return "", false
	}
	return string(b[:i]), true
}

// MySQL: packets are a 3-byte length, a sequence byte and the payload. A
// command starts a sequence (0); COM_QUERY (3) and COM_STMT_PREPARE (22)
// carry the SQL after the command byte. Packets of 16 MiB and more are
// split by the protocol and passed on as they are.
func (c *conn) nextMySQL() (int, []byte, error) {
	b := c.pending
	if len(b) < 4 {
		return 0, nil, nil
	}
	size := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
	n := 4 + size
	if len(b) < n {
		return 0, nil, nil
	}
	pkt := b[:n]
	if pkt[3] != 0 || size == 0 || (pkt[4] != 3 && pkt[4] != 22) {
		return n, pkt, nil
	}
	if size == 0xffffff {
		return 0, nil, errTooLarge
	}
	q := Rewrite(MySQL, string(pkt[5:]), c.clock())
	payload := append([]byte{pkt[4]}, q...)
	if len(payload) >= 0xffffff {
		return 0, nil, errTooLarge
	}
	f := []byte{byte(len(payload)), byte(len(payload) >> 8), byte(len(payload) >> 16), 0}
	return n, append(f, payload...), nil
}
