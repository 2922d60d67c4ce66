package zkrecipes

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
)

// Errors returned by this package. Compare with errors.Is: most are wrapped
// with detail (the path, the cause from ZooKeeper) before they reach you.
var (
	// ErrInvalidPath reports a recipe path or namespace that ZooKeeper would
	// reject or that a recipe must not use: empty, relative, with a trailing
	// slash, an empty, "." or ".." segment, a control character, or inside
	// the reserved /zookeeper tree. It is returned before any ZooKeeper call.
	ErrInvalidPath = errors.New("zkrecipes: invalid path")

	// ErrInvalidArgument reports an argument that can never work, such as a
	// zero or negative duration or count, or a nil option value. It is
	// returned before any ZooKeeper call.
	ErrInvalidArgument = errors.New("zkrecipes: invalid argument")

	// ErrNilSession is returned by every method of a recipe built on a nil
	// *Session.
	ErrNilSession = errors.New("zkrecipes: nil session")

	// ErrClosed is returned by calls on a Session after Close, and is the
	// cause of every lease lost because its Session was closed.
	ErrClosed = errors.New("zkrecipes: session closed")

	// ErrSessionExpired means the ZooKeeper session ended: the server expired
	// it, or the client was cut off for longer than the session timeout. Every
	// ephemeral node of that session is gone or about to be, so every lock it
	// held is lost.
	ErrSessionExpired = errors.New("zkrecipes: zookeeper session expired")

	// ErrSessionChanged means the connection came back under a different
	// ZooKeeper session id than the one ownership was granted under: the old
	// session, and everything it held, is gone.
	ErrSessionChanged = errors.New("zkrecipes: zookeeper session replaced by a new one")

	// ErrSuspended means the connection to ZooKeeper was lost while the
	// session may still be alive. Under the default connection-loss policy
	// (LoseOnSuspended) ownership is considered lost from that moment,
	// because another client may be granted it once the server expires the
	// session.
	ErrSuspended = errors.New("zkrecipes: connection to zookeeper suspended; ownership in doubt")

	// ErrNodeDeleted means a recipe's own node was deleted by someone else
	// (an operator, or a client with the rights to do so) while it was held
	// or queued.
	ErrNodeDeleted = errors.New("zkrecipes: own node deleted by another client")

	// ErrLockLost is matched by the Err of every lease whose ownership was
	// lost or put in doubt, whatever the cause; errors.Is also matches the
	// specific cause (ErrSuspended, ErrSessionExpired, ErrSessionChanged,
	// ErrNodeDeleted or ErrClosed).
	ErrLockLost = errors.New("zkrecipes: ownership lost")

	// ErrReleased is the Err of a lease after its holder released it, and is
	// returned by a second Release of the same lease.
	ErrReleased = errors.New("zkrecipes: lease released")

	// ErrReleaseDeferred is returned by Release when the delete of the lease
	// node could not be confirmed (the connection was down or ctx ended).
	// The lease is released locally, and the node is deleted in the
	// background as soon as the connection allows, or vanishes with the
	// session.
	ErrReleaseDeferred = errors.New("zkrecipes: release not yet confirmed by zookeeper; deleting in the background")

	// ErrLocked is returned by TryAcquire when another owner holds the lock.
	ErrLocked = errors.New("zkrecipes: held by another owner")

	// ErrRetriesExhausted wraps the last error when the retry policy gave up.
	ErrRetriesExhausted = errors.New("zkrecipes: retry policy gave up")

	// ErrRecipeConflict is returned when a path holds nodes of another recipe
	// type (say, semaphore leases under a mutex path), which would make the
	// two recipes wait on each other forever.
	ErrRecipeConflict = errors.New("zkrecipes: path is used by another recipe type")

	// ErrNoLeader is returned by Election.Leader when nobody campaigns on
	// the election's path.
	ErrNoLeader = errors.New("zkrecipes: no leader")

	// ErrBadCount is returned by a Semaphore whose shared count node (see
	// WithSharedCount) does not hold a 4-byte big-endian integer, the format
	// of Curator's SharedCount.
	ErrBadCount = errors.New("zkrecipes: shared count node does not hold a 4-byte big-endian count")

	// ErrUpgrade is returned by a read-write lock when a goroutine that holds
	// the read lock asks for the write lock: that can never be granted.
	ErrUpgrade = errors.New("zkrecipes: read lock holder cannot take the write lock")

	// ErrDataTooLarge is returned by every method of a recipe whose node
	// data (WithNodeData, WithLeaseData, WithParticipantID) would make the
	// request creating its nodes larger than the Session's limit
	// (WithMaxRequestSize). It is returned before any ZooKeeper call: nothing
	// is sent that a server would answer by closing the connection, which
	// would put every lease of the Session in doubt. The error is a
	// *DataTooLargeError.
	ErrDataTooLarge = errors.New("zkrecipes: node data too large")
)

// lostError is the Err of a lease that lost ownership: it matches
// ErrLockLost and its cause.
type lostError struct{ cause error }

func (e *lostError) Error() string {
	return "zkrecipes: ownership lost: " + trimPrefix(e.cause.Error())
}
func (e *lostError) Unwrap() error        { return e.cause }
func (e *lostError) Is(target error) bool { return target == ErrLockLost }

func lost(cause error) error { return &lostError{cause: cause} }

// connLostError is a request's failure to be written to its connection
// (see connLost): it matches zk.ErrConnectionClosed and its cause.
type connLostError struct{ cause error }

func (e *connLostError) Error() string {
	return zk.ErrConnectionClosed.Error() + ": " + e.cause.Error()
}
func (e *connLostError) Unwrap() error        { return e.cause }
func (e *connLostError) Is(target error) bool { return target == zk.ErrConnectionClosed }

// PathError reports a path that failed validation, with the reason. It
// matches ErrInvalidPath.
type PathError struct {
	Path   string // the path as given
	Reason string // what is wrong with it
}

func (e *PathError) Error() string {
	return fmt.Sprintf("zkrecipes: invalid path %q: %s", e.Path, e.Reason)
}

// Unwrap returns ErrInvalidPath.
func (e *PathError) Unwrap() error { return ErrInvalidPath }

// DataTooLargeError reports node data that does not fit in a create
// request under the Session's limit (WithMaxRequestSize). It matches
// ErrDataTooLarge.
type DataTooLargeError struct {
	Path  string // the recipe's path, as given
	Size  int    // the node data's size, in bytes
	Max   int    // the most node data that fits under Limit at this path (negative: none does)
	Limit int    // the Session's request size limit, in bytes
}

func (e *DataTooLargeError) Error() string {
	fit := fmt.Sprintf("at most %d fit in", e.Max)
	if e.Max < 0 {
		fit = "the path and ACL alone exceed"
	}
	return fmt.Sprintf("zkrecipes: node data too large: %d bytes at %s, %s the request size limit of %d bytes "+
		"(the server's jute.maxbuffer by default); make the data smaller, or raise the limit with "+
		"WithMaxRequestSize for servers with a larger jute.maxbuffer", e.Size, e.Path, fit, e.Limit)
}

// Unwrap returns ErrDataTooLarge.
func (e *DataTooLargeError) Unwrap() error { return ErrDataTooLarge }

// opError names the path (absolute, shown under the namespace) of a
// ZooKeeper request that failed with err. ctx's errors and this package's
// own, which say what happened already, pass through as they are.
func (s *Session) opError(op, path string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		strings.HasPrefix(err.Error(), "zkrecipes: ") {
		return err
	}
	return fmt.Errorf("zkrecipes: %s %s: %w", op, s.rel(path), err)
}

func trimPrefix(s string) string {
	const p = "zkrecipes: "
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}

func invalidArg(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, args...)...)
}
