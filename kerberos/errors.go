package kerberos

import "errors"

// Errors returned by this package, from New and from the SASL exchange that a
// zkrecipes Session runs on every connection (Connect wraps them, so compare
// with errors.Is). None of them gets better by retrying with the same
// configuration.
var (
	// ErrConfig reports a configuration that cannot work: no credentials, a
	// keytab, credential cache or krb5.conf that cannot be read or parsed, a
	// malformed principal. Returned by New, before any network call.
	ErrConfig = errors.New("zkrecipes/kerberos: invalid kerberos configuration")

	// ErrLogin means the KDC refused to log the client principal in (unknown
	// principal, a keytab whose key does not match, an expired credential
	// cache) or could not be reached. Check the principal, the keytab
	// (klist -k) and the KDC addresses in krb5.conf.
	ErrLogin = errors.New("zkrecipes/kerberos: kerberos login failed")

	// ErrServiceTicket means no ticket could be had for the server's service
	// principal (service/host@REALM): most often the principal does not
	// exist because the host part is not the one the server's keytab was made
	// for. Set WithServiceHost or WithCanonicalHostname.
	ErrServiceTicket = errors.New("zkrecipes/kerberos: no service ticket for the zookeeper server")

	// ErrMutualAuth means the server could not prove that it holds the
	// service principal's key: its AP-REP is missing, malformed or does not
	// match our authenticator, or it answered with a KRB-ERROR. The server
	// may not be the one you meant to reach.
	ErrMutualAuth = errors.New("zkrecipes/kerberos: server failed kerberos mutual authentication")

	// ErrProtocol means the server's GSSAPI security-layer message was
	// malformed, failed its integrity check, or asked for a SASL security
	// layer (integrity or privacy), which this mechanism does not provide.
	ErrProtocol = errors.New("zkrecipes/kerberos: unexpected GSSAPI message from the server")
)
