package zkrecipes

import (
	"context"
)

// SASLMechanism is the client side of one SASL mechanism, as ZooKeeper
// servers speak it (opcode 102, before any other request of the
// connection). A ZooKeeper server speaks exactly one mechanism, chosen by
// its JAAS "Server" login: DIGEST-MD5 for user_<name> entries, GSSAPI for a
// Kerberos principal. The client must pick the same one; there is no
// negotiation on the wire.
//
// Implementations must be safe for concurrent use: the Session calls Start
// once per connection, on every reconnect, to whichever server.
type SASLMechanism interface {
	// Name returns the mechanism's SASL name, e.g. "DIGEST-MD5" or "GSSAPI".
	Name() string
	// Start begins an exchange on a new connection to server (the
	// "host:port" as written in Connect's list) and returns the first token to send (empty for
	// DIGEST-MD5). An error ends the connection attempt: wrap ErrAuthFailed
	// in it if the credentials themselves are unusable, so that the Session
	// stops instead of redialling.
	Start(ctx context.Context, server string) (SASLClient, []byte, error)
}

// SASLClient is one exchange of a SASLMechanism on one connection.
type SASLClient interface {
	// Step takes the server's token (nil if it sent none) and returns the
	// next token. last=false: send response and pass the reply's token to
	// Step again. last=true: if response is non-nil it is sent as the final
	// token and the exchange ends when its reply (err 0) arrives; if nil,
	// the exchange ends now. An error ends the connection attempt; wrap
	// ErrAuthFailed in it for a server that failed mutual authentication,
	// and ErrSASLMechanism for a token that is not of this mechanism (a
	// server speaking another one answers the first token with its own
	// challenge), so that the Session stops instead of redialling.
	Step(ctx context.Context, challenge []byte) (response []byte, last bool, err error)
}

// WithSASL authenticates every connection of the Session with the SASL
// mechanism m (DigestMD5, or a GSSAPI mechanism from its own module) before
// any other request goes out on it: go-zookeeper's SetAuth, SetWatches and
// pings wait behind it, so a server enforcing SASL
// (enforce.auth.enabled=true, enforce.auth.schemes=sasl) accepts the
// Session. The exchange runs again on every reconnect, to any server, and
// is bounded by the connect timeout (a third of the session timeout, at
// least 2s).
//
// A server that rejects the exchange refuses the Session with an error
// matching ErrAuthFailed (ErrSASLMechanism if the server speaks another
// mechanism, ErrSASLUnavailable if it has no SASL at all). A refusal is
// final only once every server of Connect's list has refused at its latest
// attempt (one round over the servers): until then the Session tries the
// next server, which may accept it. Then Connect fails at once with a
// *ConnectError matching the refusals, and the Session stops redialling.
// If that happens on a later reconnect (the password was changed on the
// servers, say), the Session goes to StateLost with that cause and its
// leases end with it; the Session then stays disconnected until closed.
// The mechanism's Start is given the server's host as written in
// Connect's list (a Kerberos principal names it), never an address it
// resolved to.
//
// Only Connect uses it (NewSession's connection is the caller's, and
// NewSession refuses it with ErrConnectOnlyOption). It works
// with WithDialer (SASL runs over the connection the dialer returns) and
// with WithTLS (SASL over TLS), with the wire layer on or off. Default:
// no SASL.
func WithSASL(m SASLMechanism) SessionOption {
	return func(c *sessionConfig) {
		if m == nil {
			c.fail(invalidArg("nil SASL mechanism"))
			return
		}
		c.sasl = m
		c.connectOnly("WithSASL")
	}
}

// DigestMD5 returns ZooKeeper's DIGEST-MD5 SASL mechanism (RFC 2831, qop
// auth) for user and password, as listed in the server's JAAS "Server"
// section (user_<user>="<password>"). The server's answer (rspauth) is
// verified, so a server that does not know the password is refused too.
// The session then holds the id sasl:<user> (see SASLACL). DIGEST-MD5
// protects the password but not the traffic: use WithTLS as well where
// the network is not trusted. No error, log line or printed form of the
// mechanism shows the password, whatever the server sends.
func DigestMD5(user, password string) SASLMechanism {
	return &digestMD5{user: user, password: password}
}
