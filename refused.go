package zkrecipes

import (
	"errors"

	"github.com/go-zookeeper/zk"
)

// A refusal is a reply ZooKeeper gives a request that the same request
// cannot change: NOAUTH and AUTHFAILED (the Session's identity),
// INVALIDACL (the ACL it creates nodes with), BADARGUMENTS (the request
// itself), and the failures of a secured connection (ErrAuthFailed and
// the rest of its block), which stop the Session's redials. Every
// request's error passes through refusal (in traced), so that each
// recipe returns it typed, and no retry loop sends the request again:
// isRetryable is false for all of them, and the keepers, which try again
// on any other failure, back off at least maxKeepBackoff and report it
// (see PersistentNode.keep).

// refusal types the error of request op on path (absolute) when it is a
// refusal of ZooKeeper's; any other error passes through as it is.
func (s *Session) refusal(op, path string, err error) error {
	var kind error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNoAuth) || errors.Is(err, zk.ErrAuthFailed):
		kind = ErrNotAuthorized
	case errors.Is(err, zk.ErrInvalidACL):
		kind = ErrInvalidACL
	case errors.Is(err, zk.ErrBadArguments):
		kind = ErrInvalidArgument
	default:
		return err
	}
	var done *replyError
	if errors.As(err, &done) && done.refused {
		return err
	}
	return &replyError{op: op, path: s.rel(path), kind: kind, cause: err, refused: true}
}

// refused tells whether err is a reply that sending the request again
// cannot change (see refusal), or a failure of the Session's security
// that stops its redials.
func refused(err error) bool {
	return errors.Is(err, ErrNotAuthorized) || errors.Is(err, ErrInvalidACL) ||
		errors.Is(err, zk.ErrNoAuth) || errors.Is(err, zk.ErrAuthFailed) ||
		errors.Is(err, zk.ErrInvalidACL) || errors.Is(err, zk.ErrBadArguments) ||
		errors.Is(err, ErrAuthFailed) || errors.Is(err, ErrSASLRequired) ||
		errors.Is(err, ErrTLSRefused) || errors.Is(err, ErrTLSUntrusted) ||
		errors.Is(err, ErrTTLUnsupported)
}
