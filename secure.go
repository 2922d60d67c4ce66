package zkrecipes

import (
	"fmt"
	"strings"
)

// The secured connection: dial = wire(sasl(classify(tls(dial)))).
// A failure redialling cannot mend (a refused TLS handshake, an untrusted
// certificate, rejected SASL credentials, a server requiring SASL of a
// Session without it) fires s.fatal once: Connect returns it, a Session
// that was connected is lost with it as the cause, and go-zookeeper's
// client is closed so that it stops redialling.

// secureDialer wraps dial with WithTLS and WithSASL.
func (s *Session) secureDialer(dial dialFunc) dialFunc {
	bound := max(s.cfg.timeout/3, minSASLTimeout) // of the TLS handshake, and of the SASL exchange
	if s.cfg.tls != nil {
		dial = tlsDialer(dial, s.cfg.tls, bound, s.failFatal)
	}
	dial = classifyDial(dial, s.failFatal)
	if s.cfg.sasl != nil {
		dial = saslDialer(dial, s.cfg.sasl, bound, s.failFatal)
	}
	return dial
}

// failFatal ends the Session's connecting for good with err. It never
// blocks: it may run on go-zookeeper's connection goroutine.
func (s *Session) failFatal(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
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
// server requires SASL and closed the connection) into ErrSASLRequired and
// ends the Session with it. go-zookeeper v1.0.4 has no error for the
// code, only its text.
func (s *Session) saslRequired(err error) error {
	if err == nil || !strings.Contains(err.Error(), "unknown error: -124") {
		return err
	}
	e := fmt.Errorf("%w (%v)", ErrSASLRequired, err)
	s.failFatal(e)
	return e
}
