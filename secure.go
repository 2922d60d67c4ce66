package zkrecipes

import (
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"time"
)

// The secured connection: dial = wire(sasl(classify(tls(resolve(dial))))).
// A refusal redialling the same server cannot mend (a refused TLS
// handshake, an untrusted certificate, rejected SASL credentials, a
// server requiring SASL of a Session without it) is reported to refuse
// with the server as written. It fires s.fatal once every server of
// Connect's list has refused at its latest attempt (servers.go): Connect
// returns it, a Session that was connected is lost with it as the cause,
// and go-zookeeper's client is closed so that it stops redialling. Until
// then go-zookeeper moves on to the next server.

// refuseFunc is told of a server's refusal that redialling it cannot mend.
type refuseFunc = func(server string, err error)

// secureDialer wraps dial with WithTLS and WithSASL.
func (s *Session) secureDialer(dial dialFunc) dialFunc {
	bound := max(s.cfg.timeout/3, minSASLTimeout) // of the TLS handshake, and of the SASL exchange
	if s.cfg.tls != nil {
		dial = tlsDialer(dial, s.cfg.tls, bound, s.refuse)
	}
	dial = classifyDial(dial, s.refuse)
	if s.cfg.sasl != nil {
		dial = saslDialer(dial, s.cfg.sasl, bound, s.refuse)
	} else {
		dial = requiredWatch(dial, s.refuse)
	}
	return dial
}

// refuse takes server's refusal of the Session: final (failFatal) once
// every server of the list has refused at its latest attempt, or at once
// for a Session without a server list (NewSession). It never blocks.
func (s *Session) refuse(server string, err error) {
	if s.servers == nil {
		s.failFatal(err)
		return
	}
	if all := s.servers.refuse(server, err); all != nil {
		s.failFatal(all)
		return
	}
	s.cfg.log.Warn("zkrecipes: server refused the session; trying the other servers", "server", server, "err", err)
}

// failFatal ends the Session's connecting for good with err. It never
// blocks: it may run on go-zookeeper's connection goroutine.
func (s *Session) failFatal(err error) {
	s.mu.Lock()
	defer s.unlockReport()
	if s.closed || s.fatal.fired() {
		return
	}
	s.cfg.log.Error("zkrecipes: cannot connect; not retrying", "err", err)
	if s.state != StateConnecting && !s.gen.fired() {
		s.loseLocked(err)
	} else if s.state != StateConnecting && s.state != StateLost {
		s.setState(StateLost, s.gen.id, err)
	}
	s.fatal.fire(err)
}

// stopOnFatal closes the client once s.fatal fires: go-zookeeper would
// otherwise redial for ever.
func (s *Session) stopOnFatal() {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		select {
		case <-s.fatal.done:
			s.conn.Close()
		case <-s.closedCh:
		}
	}()
}

// saslRequired turns a request's -124 (SESSIONCLOSEDREQUIRESASLAUTH: the
// server requires SASL and closed the connection) into ErrSASLRequired.
// go-zookeeper v1.0.4 has no error for the code, only its text. An
// adopted connection's Session (NewSession) ends with it. Connect's
// Sessions are not ended here: their watchConn has already charged the
// refusal to the server that made it, while by now go-zookeeper may be
// on another one.
func (s *Session) saslRequired(err error) error {
	if err == nil || !strings.Contains(err.Error(), "unknown error: -124") {
		return err
	}
	e := fmt.Errorf("%w (%v)", ErrSASLRequired, err)
	if s.servers == nil {
		s.refuse(s.conn.Server(), e)
	}
	return e
}

// requiredWatch wraps dial, for a Session without SASL, so that a server
// requiring SASL is recognised on the first reply of every connection,
// whatever the request (a ping of an idle Session too): the server
// answers it with err -124 and no body, then closes the connection.
// Only the ConnectResponse and that reply's header are looked at; the
// bytes pass through unchanged.
func requiredWatch(dial dialFunc, refuse refuseFunc) dialFunc {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := dial(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return &watchConn{Conn: c, server: address, refuse: refuse}, nil
	}
}

type watchConn struct {
	net.Conn
	server string
	refuse refuseFunc
	done   bool
	prefix []byte // the stream's first bytes, until the first reply's header
}

func (c *watchConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.done && n > 0 {
		c.prefix = append(c.prefix, p[:n]...)
		c.check()
	}
	return n, err
}

// check looks at the first reply's err once its header is in.
func (c *watchConn) check() {
	b := c.prefix
	if len(b) < 4 {
		return
	}
	hs := 4 + int(int32(binary.BigEndian.Uint32(b)))
	if hs < 4+16 || hs > maxSASLFrame {
		c.stop()
		return
	}
	if len(b) < hs {
		return
	}
	if binary.BigEndian.Uint64(b[12:20]) == 0 { // session expired: nothing follows
		c.stop()
		return
	}
	const header = 4 + 4 + 8 + 4 // length, xid, zxid, err
	if len(b) < hs+header {
		return
	}
	if int32(binary.BigEndian.Uint32(b[hs+16:hs+20])) == errCodeSessionRequiresSASL {
		c.refuse(c.server, fmt.Errorf("%w (%s answered the first request with err -124 and closed the connection)", ErrSASLRequired, c.server))
	}
	c.stop()
}

func (c *watchConn) stop() { c.done, c.prefix = true, nil }
