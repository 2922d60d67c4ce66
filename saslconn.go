package zkrecipes

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// SASL runs below go-zookeeper, in the connection its dialer returns
// (dial = wire(sasl(tls(net)))), because go-zookeeper has no hook between
// the handshake's reply and its first request:
//
//  1. the first Write (the ConnectRequest) passes through;
//  2. the first Read reads the whole ConnectResponse frame and, if it
//     grants a session (sessionId != 0, timeOut > 0), runs the SASL
//     exchange on the connection (opcode 102, own xids from 1, its own
//     deadline, each reply's err checked), then serves the buffered
//     ConnectResponse: go-zookeeper never sees a SASL frame, and its
//     SetAuth, SetWatches and pings can only follow the exchange;
//  3. an expired-session ConnectResponse passes through untouched
//     (go-zookeeper reports the expiry; the next connection runs SASL).
//
// A failure the server decides (err -115 AUTHFAILED or -124
// SESSIONCLOSEDREQUIRESASLAUTH in a reply, a mechanism's ErrAuthFailed)
// is reported to refuse (see secure.go); an I/O error is returned from
// Read, and go-zookeeper dials again.

const (
	opSASL                      = 102
	errCodeAuthFailed           = -115
	errCodeSessionRequiresSASL  = -124
	maxSASLFrame                = 1 << 20
	minSASLTimeout              = 2 * time.Second
	saslConnectResponseMinBytes = 4 + 4 + 8 + 4 // protocolVersion, timeOut, sessionId, passwd length
)

// saslDialer wraps dial so that every connection runs m's exchange after
// the handshake. refuse is told of a failure retrying cannot mend.
func saslDialer(dial dialFunc, m SASLMechanism, timeout time.Duration, refuse refuseFunc) dialFunc {
	return func(network, address string, connTimeout time.Duration) (net.Conn, error) {
		c, err := dial(network, address, connTimeout)
		if err != nil {
			return nil, err
		}
		return &saslConn{Conn: c, mech: m, server: address, timeout: timeout, refuse: refuse}, nil
	}
}

type dialFunc = func(network, address string, timeout time.Duration) (net.Conn, error)

type saslConn struct {
	net.Conn
	mech    SASLMechanism
	server  string
	timeout time.Duration
	refuse  refuseFunc

	mu        sync.Mutex // guards the deadlines go-zookeeper set
	rDeadline time.Time
	wDeadline time.Time

	// read side: only go-zookeeper's reader goroutine
	pending []byte // the buffered ConnectResponse, served after the exchange
	done    bool   // exchange over (or not needed): pass-through
	err     error  // the exchange failed: every Read returns it
}

func (c *saslConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.rDeadline, c.wDeadline = t, t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

func (c *saslConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.rDeadline = t
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

func (c *saslConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.wDeadline = t
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

func (c *saslConn) Read(p []byte) (int, error) {
	if c.done {
		if len(c.pending) > 0 {
			n := copy(p, c.pending)
			c.pending = c.pending[n:]
			return n, nil
		}
		return c.Conn.Read(p)
	}
	if c.err != nil {
		return 0, c.err
	}
	if err := c.handshake(); err != nil {
		c.err = err
		_ = c.Conn.Close()
		return 0, err
	}
	c.done = true
	return c.Read(p)
}

// handshake reads the ConnectResponse and, for a live session, runs the
// exchange.
func (c *saslConn) handshake() error {
	frame, err := readFrame(c.Conn, maxSASLFrame)
	if err != nil {
		return err
	}
	c.pending = frame
	body := frame[4:]
	if len(body) < saslConnectResponseMinBytes {
		return nil // not for us to judge: go-zookeeper will
	}
	timeOut := int32(binary.BigEndian.Uint32(body[4:8]))
	sessionID := int64(binary.BigEndian.Uint64(body[8:16]))
	if sessionID == 0 || timeOut <= 0 {
		return nil // expired: no SASL on this connection; go-zookeeper reports it
	}
	if err := c.exchange(); err != nil {
		var f *saslFailure
		if errors.As(err, &f) {
			c.refuse(c.server, f.err)
			return f.err
		}
		return fmt.Errorf("zkrecipes: sasl %s with %s: %w", c.mech.Name(), c.server, err)
	}
	return nil
}

// saslFailure marks an exchange error that retrying cannot mend.
type saslFailure struct{ err error }

func (f *saslFailure) Error() string { return f.err.Error() }

// exchange runs the mechanism's exchange on the connection, within
// c.timeout, one request and reply per step.
func (c *saslConn) exchange() (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	restore, err := c.ownDeadline(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if e := restore(); e != nil && err == nil {
			err = e
		}
	}()
	client, token, err := c.mech.Start(ctx, c.server)
	if err != nil {
		return c.judged(err)
	}
	for step := 1; ; step++ {
		reply, err := c.roundTrip(step, token)
		if err != nil {
			return err
		}
		if client == nil { // the last token's reply ends it
			return nil
		}
		next, last, err := client.Step(ctx, reply)
		if err != nil {
			return c.judged(err)
		}
		if last {
			if next == nil {
				return nil
			}
			client = nil // send next, and end on its reply
		}
		token = next
	}
}

// ownDeadline bounds the connection by ctx's deadline and returns the
// function that gives go-zookeeper back the deadlines it set.
func (c *saslConn) ownDeadline(ctx context.Context) (restore func() error, err error) {
	deadline, _ := ctx.Deadline()
	if err := c.Conn.SetDeadline(deadline); err != nil {
		return nil, err
	}
	return func() error {
		c.mu.Lock()
		r, w := c.rDeadline, c.wDeadline
		c.mu.Unlock()
		if err := c.Conn.SetReadDeadline(r); err != nil {
			return err
		}
		return c.Conn.SetWriteDeadline(w)
	}, nil
}

// failure is an exchange error that retrying cannot mend.
func (c *saslConn) failure(format string, args ...any) error {
	return &saslFailure{fmt.Errorf("zkrecipes: sasl %s with %s: "+format, append([]any{c.mech.Name(), c.server}, args...)...)}
}

// judged marks a mechanism's error as final when it says the credentials
// were refused.
func (c *saslConn) judged(err error) error {
	if errors.Is(err, ErrAuthFailed) {
		return c.failure("%w", err)
	}
	return err
}

// roundTrip sends step's token (xid step) and returns the server's token
// in its reply, or why the server refused it.
func (c *saslConn) roundTrip(step int, token []byte) ([]byte, error) {
	xid := int32(step)
	if token == nil {
		token = []byte{}
	}
	if err := writeSASLRequest(c.Conn, xid, token); err != nil {
		return nil, err
	}
	rxid, code, reply, hasBody, err := readSASLReply(c.Conn)
	if err != nil {
		if step == 1 && len(token) == 0 && (errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)) {
			// The server dropped the connection on the mechanism's empty
			// first token without a word: it has no SASL server for it.
			return nil, c.failure("%w: the server closed the connection on the first token", ErrSASLUnavailable)
		}
		return nil, err
	}
	if rxid != xid {
		return nil, fmt.Errorf("reply xid %d to sasl request xid %d", rxid, xid)
	}
	switch code {
	case 0:
	case errCodeAuthFailed, errCodeSessionRequiresSASL:
		if step == 1 && len(token) == 0 {
			// Rejected before any credential was sent: not the
			// password; the server speaks another mechanism (or none).
			return nil, c.failure("%w (the server rejected its first token, err %d)", ErrSASLMechanism, code)
		}
		if step == 1 {
			return nil, c.failure("%w: the server rejected the first token (err %d): it speaks another mechanism, or refused the credentials", ErrAuthFailed, code)
		}
		return nil, c.failure("%w: server rejected step %d (err %d)", ErrAuthFailed, step, code)
	default:
		return nil, c.failure("%w: server answered step %d with err %d", ErrAuthFailed, step, code)
	}
	if !hasBody {
		reply = nil
	}
	if step == 1 && len(reply) == 0 {
		// Observed with ZooKeeper 3.8.0: a server with no SASL set up
		// (no JAAS Server section) answers the first token with err 0
		// and no token, whatever the mechanism; every mechanism it
		// could speak (DIGEST-MD5's challenge, GSSAPI's AP-REP) answers
		// the first token with one.
		return nil, c.failure("%w: it answered the first token with none", ErrSASLUnavailable)
	}
	return reply, nil
}

// writeSASLRequest writes RequestHeader{xid, 102} GetSASLRequest{token}.
func writeSASLRequest(w io.Writer, xid int32, token []byte) error {
	b := make([]byte, 4+4+4+4+len(token))
	binary.BigEndian.PutUint32(b[0:], uint32(len(b)-4))
	binary.BigEndian.PutUint32(b[4:], uint32(xid))
	binary.BigEndian.PutUint32(b[8:], opSASL)
	binary.BigEndian.PutUint32(b[12:], uint32(len(token)))
	copy(b[16:], token)
	_, err := w.Write(b)
	return err
}

// readSASLReply reads ReplyHeader{xid, zxid, err} and, if present,
// SetSASLResponse{token} (a null token is nil).
func readSASLReply(r io.Reader) (xid, code int32, token []byte, hasBody bool, err error) {
	frame, err := readFrame(r, maxSASLFrame)
	if err != nil {
		return 0, 0, nil, false, err
	}
	b := frame[4:]
	if len(b) < 16 {
		return 0, 0, nil, false, fmt.Errorf("short sasl reply (%d bytes)", len(b))
	}
	xid = int32(binary.BigEndian.Uint32(b[0:4]))
	code = int32(binary.BigEndian.Uint32(b[12:16]))
	b = b[16:]
	if len(b) < 4 {
		return xid, code, nil, false, nil
	}
	n := int32(binary.BigEndian.Uint32(b[0:4]))
	if n < 0 {
		return xid, code, nil, true, nil
	}
	if int(n) > len(b)-4 {
		return 0, 0, nil, false, fmt.Errorf("sasl token of %d bytes in a %d-byte reply", n, len(b))
	}
	return xid, code, append([]byte{}, b[4:4+n]...), true, nil
}

// readFrame reads one length-prefixed frame, its length included.
func readFrame(r io.Reader, max int) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(h[:])))
	if n < 0 || n > max {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	frame := make([]byte, 4+n)
	copy(frame, h[:])
	if _, err := io.ReadFull(r, frame[4:]); err != nil {
		return nil, err
	}
	return frame, nil
}
