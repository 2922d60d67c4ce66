package zkrecipes

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"time"
)

// WithTLS connects to the servers' TLS port (ZooKeeper's secureClientPort,
// served by its Netty connection factory) with config, a copy of which is
// made. Unless config sets ServerName, each connection verifies the
// server's certificate against the server's host as written in Connect's
// list, never an address it resolved to (an IP address written there must
// then be in the certificate's IP SANs). Put a client certificate in
// Certificates for a server with ssl.clientAuth=need (ZooKeeper's
// default) or want; with an x509 authentication provider, the session then
// holds the id x509:<subject DN> (see X509ACL). WithTLS goes with WithSASL
// (SASL runs inside the TLS connection) and with WithDialer (TLS runs over
// the connection the dialer returns).
//
// The handshake is bounded by a third of the session timeout (at least
// 2s). A handshake a server refuses (no client certificate, or one it does
// not trust) is that server's refusal matching ErrTLSRefused, and a server
// certificate that cannot be verified one matching ErrTLSUntrusted. A
// refusal is final only once every server of Connect's list has refused at
// its latest attempt (one round over the servers): until then the Session
// tries the next server, which may accept it (a rolling certificate
// change, say). Once every server has refused, Connect fails at once with
// a *ConnectError matching the refusals instead of redialling for ever;
// on a later reconnect the Session's current session ends (StateLost) with
// that cause. Only Connect uses it: NewSession refuses it with
// ErrConnectOnlyOption. Default: no TLS.
func WithTLS(config *tls.Config) SessionOption {
	return func(c *sessionConfig) {
		if config == nil {
			c.fail(invalidArg("nil tls config"))
			return
		}
		c.tls = config.Clone()
		c.connectOnly("WithTLS")
	}
}

// tlsDialer wraps dial with a TLS client handshake, bounded by
// handshake (go-zookeeper's dial timeout, 1s, is short for a JVM's first
// handshakes), with ServerName taken from the dialled host unless set.
func tlsDialer(dial dialFunc, config *tls.Config, handshake time.Duration, refuse refuseFunc) dialFunc {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		raw, err := dial(network, address, timeout)
		if err != nil {
			return nil, err
		}
		cfg := config
		if cfg.ServerName == "" {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				host = address
			}
			cfg = config.Clone()
			cfg.ServerName = host
		}
		c := tls.Client(raw, cfg)
		_ = raw.SetDeadline(time.Now().Add(max(timeout, handshake)))
		if err := c.Handshake(); err != nil {
			_ = raw.Close()
			return nil, fmt.Errorf("zkrecipes: tls handshake with %s: %w", address, err)
		}
		_ = raw.SetDeadline(time.Time{})
		// Under TLS 1.3 the server judges the client's certificate after
		// the client's side of the handshake is over: its refusal comes as
		// the first read's error.
		return &tlsConn{Conn: c, address: address, refuse: refuse}, nil
	}
}

// tlsConn classifies an alert the server sends in reply to the
// handshake, before any byte was read.
type tlsConn struct {
	net.Conn
	address string
	refuse  refuseFunc
	read    bool
}

func (c *tlsConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.read = true
	}
	if err != nil && !c.read {
		if kind := tlsFailure(err); kind != nil {
			err = &tlsError{kind, fmt.Errorf("zkrecipes: tls with %s: %w", c.address, err)}
			c.refuse(c.address, err)
		}
	}
	return n, err
}

// tlsFailure says which configuration error err shows, if any: a server
// certificate that does not verify (ErrTLSUntrusted), or an alert from the
// server (ErrTLSRefused).
func tlsFailure(err error) error {
	var (
		verr *tls.CertificateVerificationError
		uerr x509.UnknownAuthorityError
		herr x509.HostnameError
		cerr x509.CertificateInvalidError
		op   *net.OpError
	)
	switch {
	case errors.As(err, &verr), errors.As(err, &uerr), errors.As(err, &herr), errors.As(err, &cerr):
		return ErrTLSUntrusted
	case errors.As(err, &op) && op.Op == "remote error":
		return ErrTLSRefused
	}
	return nil
}

// tlsError wraps a dial error with the configuration error it shows.
type tlsError struct {
	kind, err error
}

func (e *tlsError) Error() string {
	return e.kind.Error() + ": " + trimPrefix(e.err.Error())
}
func (e *tlsError) Unwrap() []error { return []error{e.kind, e.err} }

// classifyDial reports to refuse a dial error that shows a TLS
// configuration error (from WithTLS's handshake or a WithDialer that does
// TLS), wrapped so that it matches ErrTLSRefused or ErrTLSUntrusted.
func classifyDial(dial dialFunc, refuse refuseFunc) dialFunc {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := dial(network, address, timeout)
		if err != nil {
			if kind := tlsFailure(err); kind != nil {
				err = &tlsError{kind, err}
				refuse(address, err)
			}
			return nil, err
		}
		return c, nil
	}
}
