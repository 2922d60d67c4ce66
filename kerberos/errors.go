package kerberos

import (
	"errors"
	"strings"

	"github.com/jcmturner/gokrb5/v8/krberror"
	"github.com/zkrecipes/zkrecipes"
)

// Errors returned by this package, from New and from the SASL exchange that a
// zkrecipes Session runs on every connection (Connect wraps them, so compare
// with errors.Is). ErrLogin, ErrServiceTicket, ErrMutualAuth and ErrProtocol
// also match zkrecipes.ErrAuthFailed: retrying with the same configuration
// will not help, so Connect fails at once and a Session that meets one on a
// later reconnect is lost with it as the cause. ErrKDCUnreachable does not:
// the Session keeps redialling, as for an unreachable ZooKeeper server.
var (
	// ErrConfig reports a configuration that cannot work: no credentials, a
	// keytab, credential cache or krb5.conf that cannot be read or parsed, a
	// malformed principal. Returned by New, before any network call.
	ErrConfig = errors.New("zkrecipes/kerberos: invalid kerberos configuration")

	// ErrLogin means the KDC refused to log the client principal in (unknown
	// principal, a keytab whose key does not match, an expired credential
	// cache). Check the principal, the keytab
	// (klist -kt) and the realm in krb5.conf.
	ErrLogin error = &authError{"zkrecipes/kerberos: kerberos login failed"}

	// ErrServiceTicket means no ticket could be had for the server's service
	// principal (service/host@REALM): most often the principal does not
	// exist because the host part is not the one the server's keytab was made
	// for. Set WithServiceHost or WithCanonicalHostname.
	ErrServiceTicket error = &authError{"zkrecipes/kerberos: no service ticket for the zookeeper server"}

	// ErrMutualAuth means the server could not prove that it holds the
	// service principal's key: its AP-REP is missing, malformed or does not
	// match our authenticator, or it answered with a KRB-ERROR. The server
	// may not be the one you meant to reach.
	ErrMutualAuth error = &authError{"zkrecipes/kerberos: server failed kerberos mutual authentication"}

	// ErrProtocol means the server's GSSAPI security-layer message was
	// malformed, failed its integrity check, or asked for a SASL security
	// layer (integrity or privacy), which this mechanism does not provide.
	ErrProtocol error = &authError{"zkrecipes/kerberos: unexpected GSSAPI message from the server"}

	// ErrKDCUnreachable means no KDC of the realm answered (log-in or
	// service ticket): check the kdc addresses in krb5.conf and that the KDC
	// runs. It does not match zkrecipes.ErrAuthFailed, so a Session retries.
	ErrKDCUnreachable = errors.New("zkrecipes/kerberos: no kerberos KDC answered")
)

// authError is a sentinel that also matches zkrecipes.ErrAuthFailed.
type authError struct{ msg string }

func (e *authError) Error() string        { return e.msg }
func (e *authError) Is(target error) bool { return target == zkrecipes.ErrAuthFailed }

// kdcError classifies an error of gokrb5's KDC exchanges: a networking error
// without a KDC's answer in it means no KDC was reached; anything else is
// sentinel's. gokrb5 reports a KRB-ERROR the KDC sent as text ("KRB Error:
// ...") inside the same kind of error, and its log-in wraps the error with %v,
// so the text is all there is to go by.
func kdcError(sentinel, err error) error {
	var ke krberror.Krberror
	msg := err.Error()
	network := (errors.As(err, &ke) && ke.RootCause == krberror.NetworkingError) ||
		strings.Contains(msg, "Root cause: "+krberror.NetworkingError)
	if network && !strings.Contains(msg, "KRB Error") {
		return ErrKDCUnreachable
	}
	return sentinel
}
