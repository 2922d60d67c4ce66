package zktest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// SessionCapture records the session id and password a ZooKeeper server hands to a
// client, so that [ExpireSession] can end that session from the server side, the way
// curator-test's KillSession did. Pass [SessionCapture.Dialer] to zk.Connect with
// zk.WithDialer. The zero value is ready to use and safe for concurrent use.
type SessionCapture struct {
	mu     sync.Mutex
	id     int64
	passwd []byte
	ok     bool
}

// Dialer returns a zk.Dialer that dials only loopback addresses (others fail with
// [ErrNotLoopback]) and records the session from each ConnectResponse it sees; the
// bytes pass through unchanged. A response that refuses the session (expired) is not
// recorded, so [SessionCapture.Session] keeps the latest live session.
func (s *SessionCapture) Dialer() zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		a, err := loopbackAddr(address)
		if err != nil {
			return nil, err
		}
		d := net.Dialer{Timeout: timeout}
		conn, err := d.Dial(network, a)
		if err != nil {
			return nil, err
		}
		return &captureConn{Conn: conn, capture: s}, nil
	}
}

// Session returns the latest captured session id and password; ok is false until a
// session has been established through the dialer.
func (s *SessionCapture) Session() (id int64, passwd []byte, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id, append([]byte(nil), s.passwd...), s.ok
}

func (s *SessionCapture) record(id int64, passwd []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.id, s.passwd, s.ok = id, passwd, true
}

// captureConn parses the first frame the server sends (the ConnectResponse). The zk
// client reads from one goroutine, so buf needs no lock.
type captureConn struct {
	net.Conn
	capture *SessionCapture
	buf     []byte
	done    bool
}

// maxConnectResponse bounds the bytes buffered while looking for the ConnectResponse.
const maxConnectResponse = 4096

func (c *captureConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.done && n > 0 {
		c.buf = append(c.buf, p[:n]...)
		if len(c.buf) >= 4 {
			l := int(binary.BigEndian.Uint32(c.buf))
			switch {
			case l < 0 || l > maxConnectResponse:
				c.done, c.buf = true, nil
			case len(c.buf) >= 4+l:
				if id, pw, ok := parseConnectResponse(c.buf[4 : 4+l]); ok {
					c.capture.record(id, pw)
				}
				c.done, c.buf = true, nil
			}
		}
	}
	return n, err
}

// parseConnectResponse decodes protocolVersion int32, timeOut int32, sessionId int64,
// passwd (int32 length + bytes) and an optional readOnly byte. ok is false for a
// refused session (timeOut <= 0) or a malformed frame.
func parseConnectResponse(b []byte) (id int64, passwd []byte, ok bool) {
	if len(b) < 20 {
		return 0, nil, false
	}
	timeout := int32(binary.BigEndian.Uint32(b[4:]))
	id = int64(binary.BigEndian.Uint64(b[8:]))
	pl := int32(binary.BigEndian.Uint32(b[16:]))
	if pl < 0 || int(pl) > len(b)-20 {
		return 0, nil, false
	}
	if timeout <= 0 || id == 0 {
		return 0, nil, false
	}
	return id, append([]byte(nil), b[20:20+pl]...), true
}

const (
	opCloseSession = -11
	closeXid       = 1
)

// ExpireSession ends the session (id, passwd) on the loopback server at address
// server: it opens its own connection, reattaches the session with a ConnectRequest
// (which detaches the original client's connection), sends closeSession and waits for
// the reply. The server deletes the session's ephemeral nodes; the original client
// finds its session expired when it next reconnects (go-zookeeper: StateExpired, then
// a new session). Any server of an ensemble will do. It fails with
// [ErrSessionNotFound] when the server refuses the session (already expired or wrong
// password), with [ErrNotLoopback] for other addresses, and with ctx's error or a
// 10s default timeout.
func ExpireSession(ctx context.Context, server string, id int64, passwd []byte) error {
	ctx, cancel := boundedContext(ctx, 10*time.Second)
	defer cancel()
	conn, err := dialLoopback(ctx, server)
	if err != nil {
		return fmt.Errorf("zktest: expire session 0x%x: %w", id, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	// ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId, passwd, readOnly.
	req := binary.BigEndian.AppendUint32(nil, 0)
	req = binary.BigEndian.AppendUint64(req, 0)
	req = binary.BigEndian.AppendUint32(req, 10000)
	req = binary.BigEndian.AppendUint64(req, uint64(id))
	req = binary.BigEndian.AppendUint32(req, uint32(len(passwd)))
	req = append(req, passwd...)
	req = append(req, 0)
	if err := writeFrame(conn, req); err != nil {
		return fmt.Errorf("zktest: expire session 0x%x: sending connect: %w", id, err)
	}
	resp, err := readFrame(conn)
	if err != nil {
		return fmt.Errorf("zktest: expire session 0x%x: reading connect response: %w", id, err)
	}
	if len(resp) < 16 {
		return fmt.Errorf("zktest: expire session 0x%x: short connect response (%d bytes)", id, len(resp))
	}
	if timeout := int32(binary.BigEndian.Uint32(resp[4:])); timeout <= 0 {
		return fmt.Errorf("zktest: expire session 0x%x: %w", id, ErrSessionNotFound)
	}

	// RequestHeader{xid, type=closeSession}, empty body.
	hdr := binary.BigEndian.AppendUint32(nil, closeXid)
	op := int32(opCloseSession)
	hdr = binary.BigEndian.AppendUint32(hdr, uint32(op))
	if err := writeFrame(conn, hdr); err != nil {
		return fmt.Errorf("zktest: expire session 0x%x: sending closeSession: %w", id, err)
	}
	for {
		r, err := readFrame(conn)
		if err != nil {
			return fmt.Errorf("zktest: expire session 0x%x: reading closeSession reply: %w", id, err)
		}
		if len(r) < 16 {
			return fmt.Errorf("zktest: expire session 0x%x: short reply (%d bytes)", id, len(r))
		}
		// ReplyHeader{xid int32, zxid int64, err int32}; skip notifications (xid < 0).
		if int32(binary.BigEndian.Uint32(r)) != closeXid {
			continue
		}
		if code := int32(binary.BigEndian.Uint32(r[12:])); code != 0 {
			return fmt.Errorf("zktest: expire session 0x%x: closeSession failed with code %d", id, code)
		}
		return nil
	}
}

// ExpireSession expires the session last captured by capture, trying each server in
// turn (some may be down or stopped) until one succeeds. It returns [ErrNoSession]
// when capture has seen no session and [ErrSessionNotFound] when the session is
// already gone.
func (c *Cluster) ExpireSession(ctx context.Context, capture *SessionCapture) error {
	id, pw, ok := capture.Session()
	if !ok {
		return ErrNoSession
	}
	var errs []error
	for _, s := range c.Servers() {
		sctx, cancel := boundedContext(ctx, 3*time.Second)
		err := ExpireSession(sctx, s, id, pw)
		cancel()
		if err == nil || errors.Is(err, ErrSessionNotFound) || ctx.Err() != nil {
			return err
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func writeFrame(w io.Writer, body []byte) error {
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), uint32(len(body)))
	_, err := w.Write(append(b, body...))
	return err
}

func readFrame(r io.Reader) ([]byte, error) {
	var l [4]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(l[:])
	if n > 1<<20 {
		return nil, fmt.Errorf("frame of %d bytes is too large", n)
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}
