package zkrecipes

import (
	"errors"
	"fmt"
)

// Errors returned by this package. Compare with errors.Is: most are wrapped
// with detail (the path, the cause from ZooKeeper) before they reach you.
var (
	// ErrInvalidPath reports a recipe path or namespace that ZooKeeper would
	// reject or a recipe must not use (see PathError), before any call.
	ErrInvalidPath = errors.New("zkrecipes: invalid path")

	// ErrInvalidArgument reports an argument that can never work (a nil
	// value, a zero or negative duration or count), before any call; or a
	// request ZooKeeper refused as malformed (BADARGUMENTS: the error then
	// also matches zk.ErrBadArguments), which no retry sends again.
	ErrInvalidArgument = errors.New("zkrecipes: invalid argument")

	// ErrNilSession is returned by every method of a recipe built on a nil
	// *Session.
	ErrNilSession = errors.New("zkrecipes: nil session")

	// ErrClosed is returned by calls on a Session after Close, and by a
	// request that Close cut short (never zk.ErrConnectionClosed, which
	// means the connection may come back); it is the cause of every lease
	// lost because its Session was closed.
	ErrClosed = errors.New("zkrecipes: session closed")

	// ErrSessionExpired means the ZooKeeper session ended: the server expired
	// it, or the client was cut off for the whole session timeout. Everything
	// it held is lost.
	ErrSessionExpired = errors.New("zkrecipes: zookeeper session expired")

	// ErrSessionChanged means the connection came back under another
	// ZooKeeper session than the one ownership was granted under.
	ErrSessionChanged = errors.New("zkrecipes: zookeeper session replaced by a new one")

	// ErrSuspended means the connection was lost while the session may
	// still be alive: under LoseOnSuspended (the default) ownership ends then.
	ErrSuspended = errors.New("zkrecipes: connection to zookeeper suspended; ownership in doubt")

	// ErrNodeDeleted means a recipe's own node was deleted by another
	// client while it was held or queued.
	ErrNodeDeleted = errors.New("zkrecipes: own node deleted by another client")

	// ErrLockLost is matched by the Err of every lease whose ownership was
	// lost or put in doubt; errors.Is also matches the cause (ErrSuspended,
	// ErrSessionExpired, ErrSessionChanged, ErrNodeDeleted, ErrClosed or
	// ErrLeaseExpired).
	ErrLockLost = errors.New("zkrecipes: ownership lost")

	// ErrReleased is the Err of a lease after its holder released it, and is
	// returned by a second Release of the same lease.
	ErrReleased = errors.New("zkrecipes: lease released")

	// ErrReleaseDeferred is returned by Release when the delete could not be
	// confirmed (the connection was down or ctx ended): the lease is released,
	// and its node deleted in the background or ended with the session. A
	// PersistentNode's Close returns it too: there, a persistent node
	// (ModePersistent, ModePersistentSequential, a discovery Static or
	// Permanent registration) is deleted in the background only while the
	// Session stays open, and stays if the Session is closed first. Every
	// Close(ctx) of a recipe that runs in the background (the caches,
	// PersistentWatch, GroupMember) returns it, wrapping ctx's error, when
	// ctx ends before its clean-up is confirmed: the clean-up goes on in the
	// background.
	ErrReleaseDeferred = errors.New("zkrecipes: release not yet confirmed by zookeeper; deleting in the background")

	// ErrLocked is returned by TryAcquire when another owner holds the lock.
	ErrLocked = errors.New("zkrecipes: held by another owner")

	// ErrRetriesExhausted wraps the last error when the retry policy gave up.
	ErrRetriesExhausted = errors.New("zkrecipes: retry policy gave up")

	// ErrRecipeConflict is returned when a path holds nodes of another
	// recipe type, on which the two would wait for each other forever.
	ErrRecipeConflict = errors.New("zkrecipes: path is used by another recipe type")

	// ErrNoLeader is returned by Election.Leader when nobody campaigns on
	// the election's path.
	ErrNoLeader = errors.New("zkrecipes: no leader")

	// ErrBadCount is returned by a SharedCount, or a Semaphore whose
	// WithSharedCount node, does not hold a 4-byte big-endian integer
	// (Curator's SharedCount format).
	ErrBadCount = errors.New("zkrecipes: shared count node does not hold a 4-byte big-endian count")

	// ErrUpgrade is returned when a holder of a read lock asks for the write
	// lock, which could never be granted.
	ErrUpgrade = errors.New("zkrecipes: read lock holder cannot take the write lock")

	// ErrDataTooLarge is returned, before any call, by every method of a
	// recipe whose node data would make its create larger than the Session's
	// WithMaxRequestSize, and by any call whose write (create, setData,
	// multi) would, before it is sent. The error is a *DataTooLargeError.
	ErrDataTooLarge = errors.New("zkrecipes: node data too large")

	// ErrQueueEmpty is returned by Queue.Poll and Queue.Peek when the queue
	// holds no item.
	ErrQueueEmpty = errors.New("zkrecipes: queue empty")

	// ErrTakeUncertain is returned, with the item, by a Queue take whose
	// delete may or may not have run on the server (the connection was lost
	// before its reply) and whose item was gone afterwards: another
	// consumer may have taken the same item.
	ErrTakeUncertain = errors.New("zkrecipes: queue take uncertain; another consumer may also have the item")

	// ErrLeaseExpired is the cause of a lease lost because its lease time
	// (WithLeaseTime) ran out: its Err matches both ErrLockLost and
	// ErrLeaseExpired.
	ErrLeaseExpired = errors.New("zkrecipes: lease time expired")

	// ErrNodeLeft is returned by the Close of a PersistentNode in a
	// persistent mode (and so by a discovery Static or Permanent
	// registration's Unregister or Close) when its Session was closed
	// before the node could be deleted: unlike an ephemeral node, it stays
	// in ZooKeeper. The error names the node (also in Status().Path); delete
	// it with another Session if it must go.
	ErrNodeLeft = errors.New("zkrecipes: persistent node left in zookeeper: its session was closed before the delete; delete it with another session")

	// ErrNotAuthorized is returned by a call whose request ZooKeeper
	// refused for the Session's identity: a node's ACL (for a create or a
	// delete, its parent's) does not grant the Session the permission
	// (NOAUTH), or the server rejected its credentials (AUTHFAILED). The
	// error names the request and its path and also matches ZooKeeper's
	// error (zk.ErrNoAuth, zk.ErrAuthFailed). Retrying cannot help, so no
	// recipe retries it: authenticate the Session as an identity the ACL
	// grants (WithDigestAuth, WithSASL, a WithTLS client certificate), or
	// have the ACL changed.
	ErrNotAuthorized = errors.New("zkrecipes: not authorized by the node's acl; check the Session's credentials (WithDigestAuth, WithSASL, WithTLS) and the acl of the path and its parent")

	// ErrInvalidACL is returned by a call whose create ZooKeeper refused
	// for the ACL given (INVALIDACL): the Session's WithACL holds an ACL
	// the server will not set, such as CreatorACL or an auth, sasl or
	// x509 entry on a Session not authenticated that way, an unknown
	// scheme, or no entry at all. The error names the request and its
	// path and also matches zk.ErrInvalidACL. Retrying cannot help:
	// change WithACL or authenticate the Session.
	ErrInvalidACL = errors.New("zkrecipes: acl refused by the server; check WithACL against the Session's authentication")

	// ErrNoServerAccepted is matched by every *ConnectError: no server of
	// the list accepted the Session, either before Connect's ctx ended or
	// because every one refused it for a reason retrying cannot mend.
	ErrNoServerAccepted = errors.New("zkrecipes: no server accepted the session")
)

// Errors of the shared values and counters.
var (
	// ErrVersionChanged is returned by a TrySet whose expected version is
	// no longer the node's: another client wrote it since. Read the value
	// again and retry.
	ErrVersionChanged = errors.New("zkrecipes: value changed since the version given; read it again and retry")

	// ErrBadAtomicLong is returned by an AtomicCounter whose node holds
	// data other than an 8-byte big-endian integer (Curator's
	// DistributedAtomicLong format) or nothing.
	ErrBadAtomicLong = errors.New("zkrecipes: node does not hold an 8-byte big-endian long (Curator's DistributedAtomicLong format)")

	// ErrOutcomeUnknown is returned by a write that may or may not have
	// been applied: its reply was lost with the connection, or ctx ended
	// while it was on its way, and no read could tell. The writes that
	// return it: an AtomicCounter change, a SharedValue or SharedCount
	// write, an Election.Proclaim whose term ended after its write was
	// sent, the Session's Create (unprotected), Set, Delete, Multi,
	// Reconfig and IncrementalReconfig, a WorkQueue's Put and PutMulti,
	// and a WorkItem's Ack and Release.
	// The error also matches its cause (zk.ErrConnectionClosed, ctx's
	// error, ErrClosed). Read the value before trying again: a change
	// retried blindly may be made twice.
	ErrOutcomeUnknown = errors.New("zkrecipes: outcome unknown: the write may or may not have been applied; read the value before retrying")

	// ErrValueDeleted is returned by SharedValue.Watch and SharedCount.Watch
	// when the node they follow was deleted (and perhaps created again):
	// the versions of a node created anew start again at 0, so its values
	// are not news of the one watched. Watch again to follow the value
	// anew (its node is then created with the seed if missing).
	ErrValueDeleted = errors.New("zkrecipes: shared value deleted; watch again to follow it anew")
)

// ErrNotLeader is returned by Election.Proclaim when the lease it is given
// no longer holds the leadership; the error also matches the lease's Err
// (ErrReleased, or ErrLockLost and its cause).
var ErrNotLeader = errors.New("zkrecipes: not the leader")

// Errors of the double barrier.
var (
	// ErrEntered is returned by DoubleBarrier.Enter on a member that has
	// entered and not left: call Leave first.
	ErrEntered = errors.New("zkrecipes: double barrier already entered by this member; call Leave first")

	// ErrNotEntered is returned by DoubleBarrier.Leave on a member that has
	// not entered: call Enter first.
	ErrNotEntered = errors.New("zkrecipes: double barrier not entered by this member; call Enter first")
)

// ErrNotHolder is returned by Revoke for a lock node whose contender is
// still waiting for the lock: only a holder can be asked to give it up.
var ErrNotHolder = errors.New("zkrecipes: not a holder of the lock")

// ErrCacheStarted is returned by a cache's Start when it was started
// before, or closed: a cache starts once. After (or during) Close the
// error also matches ErrClosed.
var ErrCacheStarted = errors.New("zkrecipes: cache already started or closed; a cache starts once")

// ErrNodeStarted is returned by PersistentNode.Start (and GroupMember's)
// when it was started before, or closed: a PersistentNode starts once.
// After (or during) Close the error also matches ErrClosed.
var ErrNodeStarted = errors.New("zkrecipes: persistent node already started or closed; a node starts once")

// ErrNotCompressed is returned when data read with compression on
// (WithCompression, a recipe's compression option) is not gzip as
// Curator's GzipCompressionProvider writes it: the node was written
// uncompressed (by a client with compression off), or its data is
// corrupt. Curator's getData().decompressed() fails on such data too. Turn
// compression on for every writer of the node, or off for its readers.
var ErrNotCompressed = errors.New("zkrecipes: node data is not gzip-compressed; every client of the node must agree on compression")

// ErrTTLUnsupported is returned by the create of a TTL node
// (ModePersistentWithTTL, ModePersistentSequentialWithTTL,
// PersistentTtlNode) that the server refused because TTL nodes are off
// there, as they are by default (it answers UNIMPLEMENTED). Run every
// server with the system property zookeeper.extendedTypesEnabled=true
// (ZooKeeper 3.5.3 or later), or do without TTL nodes.
var ErrTTLUnsupported = errors.New("zkrecipes: the server refuses TTL nodes; run it with -Dzookeeper.extendedTypesEnabled=true")

// Errors of secured connections (WithSASL, WithTLS). Connect returns them
// instead of redialling; a Session that meets one on a later reconnect is
// lost with it as the cause.
var (
	// ErrAuthFailed means the server rejected the Session's SASL
	// credentials (wrong user or password, an unusable ticket), or could
	// not prove it knew them: fix the credentials; retrying will not help.
	ErrAuthFailed = errors.New("zkrecipes: sasl authentication failed; check the credentials")

	// ErrSASLMechanism means the server does not speak the Session's SASL
	// mechanism (a ZooKeeper server speaks exactly one, set by its JAAS
	// Server login): use the mechanism the server is configured for. It
	// also matches ErrAuthFailed.
	ErrSASLMechanism error = &alsoError{"zkrecipes: server does not speak this sasl mechanism; use the one its JAAS Server login configures", ErrAuthFailed}

	// ErrSASLUnavailable means the server has no SASL set up (no JAAS
	// Server section): connect without WithSASL, or configure the server.
	// It also matches ErrAuthFailed.
	ErrSASLUnavailable error = &alsoError{"zkrecipes: server has no sasl configured; connect without WithSASL or configure the server", ErrAuthFailed}

	// ErrSASLRequired means the server requires SASL authentication
	// (enforce.auth.schemes=sasl) and closed the connection of a Session
	// that had none: connect WithSASL.
	ErrSASLRequired = errors.New("zkrecipes: server requires sasl authentication; connect WithSASL")

	// ErrTLSRefused means the server refused the TLS handshake, most often
	// because it requires a client certificate (ssl.clientAuth=need) and
	// none, or one it does not trust, was offered: set Certificates in the
	// WithTLS config.
	ErrTLSRefused = errors.New("zkrecipes: tls handshake refused by the server; it may require a client certificate it trusts")

	// ErrTLSUntrusted means the server's TLS certificate could not be
	// verified (unknown authority, wrong name, expired): set RootCAs (and
	// ServerName if the dialled host is not in the certificate) in the
	// WithTLS config.
	ErrTLSUntrusted = errors.New("zkrecipes: server's tls certificate not trusted; set RootCAs to its CA")
)

// ErrDigestUser is returned by Connect and NewSession for a digest user
// name (WithDigestAuth) or a digest ACL (WithACL with a DigestACL) whose
// user holds a ':': ZooKeeper splits user:password at the first ':', so the
// identity authenticated would not be the one the ACL grants. Choose a
// user name without ':'. It also matches ErrInvalidArgument.
var ErrDigestUser error = &alsoError{"zkrecipes: digest user name contains ':', which ZooKeeper takes as the end of the user name; choose a user name without ':'", ErrInvalidArgument}

// ErrConnectOnlyOption is returned by NewSession given an option only
// Connect honours (WithTLS, WithSASL, WithDialer, WithWireLayer,
// WithResolver, WithEnsembleTracking(true)): NewSession adopts a connection the caller already made,
// so such an option would be silently ignored, and a caller would believe
// the connection secured when it is not. The error names the options. Use
// Connect, or set them on the zk.Conn before adopting it. It also matches
// ErrInvalidArgument.
var ErrConnectOnlyOption error = &alsoError{"zkrecipes: option only Connect honours; use Connect, or set it on the zk.Conn before NewSession adopts it", ErrInvalidArgument}

// ErrPersistentWatchUnsupported is returned by PersistentWatch.Start (and
// by what is built on it) when persistent watches cannot be had: the
// Session was made by NewSession or with WithWireLayer(false), or the
// server predates ZooKeeper 3.6. Fall back to one-shot watches.
var ErrPersistentWatchUnsupported = errors.New("zkrecipes: persistent watches unsupported: they need a Session made by Connect with the wire layer on and ZooKeeper 3.6 or later; fall back to one-shot watches")

// Errors of reconfiguration (Session.Reconfig, Session.IncrementalReconfig).
var (
	// ErrReconfigDisabled is returned by a reconfiguration the ensemble
	// refused because it runs with reconfiguration off (ZooKeeper's
	// ZRECONFIGDISABLED; the error also matches zk.ErrReconfigDisabled).
	// Set reconfigEnabled=true in every server's zoo.cfg, with a dynamic
	// configuration file, and restart them.
	ErrReconfigDisabled = errors.New("zkrecipes: reconfiguration disabled on the ensemble; set reconfigEnabled=true in every server's zoo.cfg")

	// ErrReconfigNotAuthorized is returned by a reconfiguration the
	// ensemble refused for the Session's identity (NOAUTH): only a super
	// user may reconfigure, unless the servers run with skipACL. It also
	// matches ErrNotAuthorized and zk.ErrNoAuth. Authenticate the Session
	// as the super user (WithDigestAuth with the user of the servers'
	// zookeeper.DigestAuthenticationProvider.superDigest), or as a user the
	// servers' zookeeper.superUser names.
	ErrReconfigNotAuthorized error = &alsoError{"zkrecipes: reconfiguration not authorized; authenticate the Session as the ensemble's super user", ErrNotAuthorized}

	// ErrConfigChanged is returned by a reconfiguration given a version
	// that is no longer the configuration's (BADVERSION): another
	// reconfiguration came first. It also matches ErrVersionChanged and
	// zk.ErrBadVersion. Read the configuration again (Session.Config) and
	// decide again.
	ErrConfigChanged error = &alsoError{"zkrecipes: ensemble configuration changed since the version given; read it again with Session.Config and retry", ErrVersionChanged}
)

// Errors of the Session's node operations (Create, Get, Set, Delete,
// Multi...). Each error also matches go-zookeeper's (zk.ErrNoNode...) and
// names the operation and the path, relative to the namespace.
var (
	// ErrNoNode means the node does not exist (for a Create: its parent
	// does not; pass WithParents(true) to create missing parents).
	ErrNoNode = errors.New("zkrecipes: node does not exist")

	// ErrNodeExists is returned by a Create whose node exists already.
	ErrNodeExists = errors.New("zkrecipes: node already exists")

	// ErrBadVersion is returned by a Set, SetACL, Delete or Check given a
	// version (WithVersion) that is no longer the node's: another client
	// changed it since. Read it again before trying again.
	ErrBadVersion = errors.New("zkrecipes: node version is not the one given; read the node again")

	// ErrNotEmpty is returned by a Delete of a node that has children:
	// delete them first, or pass WithDeleteChildren(true) to Delete.
	ErrNotEmpty = errors.New("zkrecipes: node has children; delete them first or pass WithDeleteChildren(true) to Delete")

	// ErrNoChildrenForEphemerals is returned by a Create under an
	// ephemeral node: an ephemeral node cannot have children.
	ErrNoChildrenForEphemerals = errors.New("zkrecipes: ephemeral nodes cannot have children")

	// ErrDeleteDeferred is returned by a Delete passed WithGuaranteed
	// whose delete could not be confirmed (the connection was lost, ctx
	// ended, the retry policy gave up): the delete goes on in the
	// background until the node is gone, across connection losses and
	// session expiries, and Session.Close reports it (ErrDeletePending)
	// if it is still pending then. The error also matches its cause.
	ErrDeleteDeferred = errors.New("zkrecipes: delete not yet confirmed by zookeeper; deleting in the background")

	// ErrDeletePending is returned by Session.Close when guaranteed
	// deletes (Delete WithGuaranteed) had not completed: their nodes may
	// still exist. The error names them; delete them with another Session
	// if they must go.
	ErrDeletePending = errors.New("zkrecipes: guaranteed deletes still pending at close; their nodes may remain")

	// ErrServerTooOld is returned by a request the server does not
	// implement (it answered UNIMPLEMENTED): Ephemerals and
	// CountDescendants need ZooKeeper 3.6 or later, WhoAmI 3.7 or later.
	// Such a server also closes the connection, which the Session then
	// opens again (its leases see a suspension). Upgrade the servers or
	// do without the request.
	ErrServerTooOld = errors.New("zkrecipes: the server does not implement this request; it needs a newer zookeeper")

	// ErrNeedsWireLayer is returned by the requests the wire layer sends
	// itself (Ephemerals, CountDescendants, WhoAmI) on a Session made by
	// NewSession or with WithWireLayer(false), before anything is sent.
	// Use a Session made by Connect with the wire layer on.
	ErrNeedsWireLayer = errors.New("zkrecipes: request needs a session made by Connect with the wire layer on")

	// ErrBadWorkItem is returned, with the locked item, by a WorkQueue's
	// Take whose item's data is not in Curator's item encoding (written by
	// something other than a WorkQueue or a Curator DistributedQueue). Ack
	// the item to drop it, as Curator's consumer does.
	ErrBadWorkItem = errors.New("zkrecipes: queue item not in curator's item encoding")

	// ErrItemLost is returned by a WorkItem's Ack and Release, and by a
	// transaction holding its Check, once another WorkQueue consumer has
	// taken the item since (its lock was lost), or the item was acked,
	// released or deleted: this consumer no longer has it. The error also
	// matches the server's answer (ErrNoNode or ErrBadVersion).
	ErrItemLost = errors.New("zkrecipes: work item lost: another consumer took it since, or it is gone")

	// ErrSharderStarted is returned by QueueSharder.Start when it was
	// started before, or closed: a sharder starts once. After (or during)
	// Close the error also matches ErrClosed.
	ErrSharderStarted = errors.New("zkrecipes: queue sharder already started or closed; a sharder starts once")

	// ErrSharderNotStarted is returned by a QueueSharder's Queue, Put,
	// PutMulti and Take before its Start has succeeded: it knows no shard
	// yet. Call Start first.
	ErrSharderNotStarted = errors.New("zkrecipes: queue sharder not started; call Start first")
)

// ErrInvalidItemID reports, before any call, a work item id (WithID,
// WorkQueue.Remove) that cannot name an item: an empty one (Curator's
// DistributedIdQueue refuses it too), one holding '/' or '|' (they would
// break the item's node name), or one holding a character ZooKeeper
// refuses in a node name (control and reserved characters, and those past
// U+FFFF). Give a non-empty id of other characters. It matches
// ErrInvalidArgument.
var ErrInvalidItemID = fmt.Errorf("%w: work item id: give a non-empty id without '/', '|' or control characters", ErrInvalidArgument)
