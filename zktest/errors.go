package zktest

import "errors"

// ErrUnsupported is returned by a [Cluster] method that its backend cannot perform,
// for example [Cluster.Kill] on servers listed in ZK_SERVERS, which this process does
// not own. Tests usually skip when errors.Is(err, ErrUnsupported).
var ErrUnsupported = errors.New("zktest: operation not supported by this backend")

// ErrNoBackend is wrapped by the error [StartCluster] returns when no backend can run
// a server on this machine; the message says what to install. [Start] turns it into a
// skip (or a failure when CI is set).
var ErrNoBackend = errors.New("zktest: no ZooKeeper backend available")

// ErrNotLoopback is returned when an address outside 127.0.0.0/8 is given to anything
// in this package: the harness never dials or serves anywhere but loopback.
var ErrNotLoopback = errors.New("zktest: address is not on loopback (127.0.0.0/8)")

// ErrNoLeader is returned by [Cluster.Leader] when no reachable server reports itself
// as leader (or standalone), for example during an election.
var ErrNoLeader = errors.New("zktest: no server reports Mode leader or standalone")

// ErrSessionNotFound is returned by [ExpireSession] when the server refuses to
// reattach the session: it has already expired, or the password is wrong.
var ErrSessionNotFound = errors.New("zktest: session unknown to the server (expired or wrong password)")

// ErrNoSession is returned by [Cluster.ExpireSession] when the [SessionCapture] has
// not yet seen a session established through its dialer.
var ErrNoSession = errors.New("zktest: no session captured yet")

// ErrNoKerberos is wrapped by the error [NewKDC] returns when the MIT Kerberos KDC
// is not installed; the message says what to install. [StartKDC] turns it into a
// skip (or a failure when CI is set).
var ErrNoKerberos = errors.New("zktest: no MIT Kerberos KDC installed")

// ErrBackendName is wrapped by the error [RegisterBackend] returns when the name is
// empty, is one of the harness's own ("auto", "servers", "java") or is registered
// already: pick another name, or register once.
var ErrBackendName = errors.New("zktest: backend name not available")
