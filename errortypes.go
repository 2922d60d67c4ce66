package zkrecipes

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
)

// The error types behind the sentinels of errors.go: each matches its
// sentinel with errors.Is and carries the detail (a path, a cause, each
// server's reason).

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

// outcomeUnknown is the error of request op on path (relative to the
// namespace) whose reply was lost (cause: a lost connection, ctx's end,
// Close): it matches ErrOutcomeUnknown and cause.
func outcomeUnknown(op, path string, cause error) error {
	return fmt.Errorf("%w: %s %s: no reply: %w", ErrOutcomeUnknown, op, path, cause)
}

// errCutShort is the error of a request whose reply Close cut short: it
// matches ErrClosed (never zk.ErrConnectionClosed: the connection will not
// come back) and, as a request go-zookeeper failed while closing,
// zk.ErrClosing, so that a write's caller knows it may have been applied.
var errCutShort error = &cutShortError{}

// cutShortError is the error of a request whose reply the end of the
// Session cut short: Close's (errCutShort), or a failure no redial can
// mend (reason, which it wraps; it then does not match ErrClosed).
type cutShortError struct{ reason error }

func (e *cutShortError) Error() string {
	if e.reason == nil {
		return ErrClosed.Error()
	}
	return e.reason.Error()
}
func (e *cutShortError) Unwrap() error { return e.reason }
func (e *cutShortError) Is(target error) bool {
	return target == zk.ErrClosing || target == ErrClosed && e.reason == nil
}

// ConnectError is how Connect fails when no server accepted the Session,
// and the cause of a Session lost because every server refused it: it
// gives each server's reason. It matches ErrNoServerAccepted, Err when
// set (so errors.Is(err, context.DeadlineExceeded) holds when Connect's
// ctx ended), and each server's reason (so a refusal matches
// ErrTLSRefused, ErrTLSUntrusted, ErrAuthFailed...).
type ConnectError struct {
	// Servers lists each server given to Connect once (a missing port is
	// 2181; a server listed twice appears once), in the order of first
	// mention, with why its latest failed attempt failed.
	Servers []ServerError
	// Err is the error of Connect's ctx when it ended the wait, or nil
	// when every server refused the Session.
	Err error
}

// ServerError is why the latest failed attempt at one server failed.
type ServerError struct {
	Server string // host:port, as written
	// Err is nil when no attempt at the server has failed: it was not
	// tried yet, or it was dialled and had not answered when Connect gave
	// up.
	Err error
}

func (e *ConnectError) Error() string {
	var b strings.Builder
	b.WriteString(ErrNoServerAccepted.Error())
	if e.Err != nil {
		b.WriteString(" (" + e.Err.Error() + ")")
	} else {
		b.WriteString(" (every server refused it)")
	}
	for i, s := range e.Servers {
		sep := "; "
		if i == 0 {
			sep = ": "
		}
		why := "no session established"
		if s.Err != nil {
			why = trimPrefix(s.Err.Error())
		}
		b.WriteString(sep + s.Server + ": " + why)
	}
	return b.String()
}

// Unwrap returns ErrNoServerAccepted, Err and each server's reason.
func (e *ConnectError) Unwrap() []error {
	errs := []error{ErrNoServerAccepted}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	for _, s := range e.Servers {
		if s.Err != nil {
			errs = append(errs, s.Err)
		}
	}
	return errs
}

// waitError is how an acquisition fails when its ctx ends while it waits:
// it names what waited and, when the Session was cut off from every
// server at that moment, why each server's latest attempt failed (as a
// ConnectError says). It matches ctx's error and each server's reason.
type waitError struct {
	what    string        // "acquisition of /locks/report"
	err     error         // ctx's error, as the wait returned it
	cutOff  bool          // the Session had no connection when ctx ended
	servers []ServerError // then, the servers whose latest attempt failed
}

func (e *waitError) Error() string {
	var b strings.Builder
	b.WriteString("zkrecipes: " + e.what + ": " + trimPrefix(e.err.Error()))
	if e.cutOff {
		b.WriteString(" while disconnected")
	}
	for i, s := range e.servers {
		sep := "; "
		if i == 0 {
			sep = ": "
		}
		b.WriteString(sep + s.Server + ": " + trimPrefix(s.Err.Error()))
	}
	return b.String()
}

// Unwrap returns ctx's error and each server's reason.
func (e *waitError) Unwrap() []error {
	errs := []error{e.err}
	for _, s := range e.servers {
		errs = append(errs, s.Err)
	}
	return errs
}

// waitFailed names what waited in the error of a wait that ctx ended,
// and adds why no server answered when the Session had no connection
// then (a waitError); any other error is returned as it is. An error
// naming a wait already (a semaphore's own mutex) is named again.
func (s *Session) waitFailed(ctx context.Context, what string, err error) error {
	if err == nil || ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
		return err
	}
	if we := (*waitError)(nil); errors.As(err, &we) {
		err = we.err // a wait named already (a semaphore's own mutex) is named again
	}
	e := &waitError{what: what, err: err, cutOff: !s.State().connected()}
	var ce *ConnectError
	if e.cutOff && s.servers != nil && errors.As(s.servers.connectError(nil), &ce) {
		for _, se := range ce.Servers {
			if se.Err != nil {
				e.servers = append(e.servers, se)
			}
		}
	}
	return e
}

// PathError reports a path that failed validation (empty, relative, a
// trailing slash, an empty, "." or ".." segment, a control character,
// inside /zookeeper, or too long for a node there to fit in the Session's
// request size limit). It matches ErrInvalidPath.
type PathError struct {
	Path   string // the path as given
	Reason string // what is wrong with it
}

func (e *PathError) Error() string {
	p := e.Path
	if len(p) > 200 { // a path too long for a request: its head says which
		p = p[:200] + "..."
	}
	return fmt.Sprintf("zkrecipes: invalid path %q: %s", p, e.Reason)
}

// Unwrap returns ErrInvalidPath.
func (e *PathError) Unwrap() error { return ErrInvalidPath }

// DataTooLargeError reports node data that does not fit in a create
// request under the Session's limit (WithMaxRequestSize). It matches
// ErrDataTooLarge.
type DataTooLargeError struct {
	Path  string // the recipe's path, as given (for a write refused as it was sent: the node's)
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
// ZooKeeper request that failed with err. A nil err, ctx's errors and
// this package's own, which say what happened already, pass through as
// they are.
func (s *Session) opError(op, path string, err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
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

// compressedDataError is ErrNotCompressed with the reason (and the path,
// once known).
type compressedDataError struct {
	path   string
	reason string
	err    error // gzip's error, if any
}

func (e *compressedDataError) Error() string {
	msg := trimPrefix(ErrNotCompressed.Error()) + ": " + e.reason
	if e.path != "" {
		msg = e.path + ": " + msg
	}
	if e.err != nil {
		msg += ": " + e.err.Error()
	}
	return "zkrecipes: " + msg
}

func (e *compressedDataError) Is(target error) bool { return target == ErrNotCompressed }
func (e *compressedDataError) Unwrap() error        { return e.err }

// startAfterClose is what Start returns after (or during) Close: it
// matches ErrClosed and, as a second Start does, once (ErrCacheStarted or
// ErrNodeStarted).
type startAfterClose struct{ once error }

func (e *startAfterClose) Error() string {
	return "zkrecipes: closed before it started; a closed recipe cannot start"
}
func (e *startAfterClose) Is(target error) bool { return target == ErrClosed || target == e.once }

// alsoError is a sentinel that also matches a broader one.
type alsoError struct {
	msg  string
	also error
}

func (e *alsoError) Error() string        { return e.msg }
func (e *alsoError) Is(target error) bool { return target == e.also }

// replyError is the error of a request that ZooKeeper answered with one
// of its errors: it names the request and its path (relative to the
// namespace), matches kind (ErrNoNode, ErrNotAuthorized...) and
// ZooKeeper's error (cause). A refusal (refused.go) also shows the cause
// and says what to do.
type replyError struct {
	op, path string
	kind     error
	cause    error
	refused  bool
}

func (e *replyError) Error() string {
	what := trimPrefix(e.kind.Error())
	if !e.refused {
		return fmt.Sprintf("zkrecipes: %s %s: %s", e.op, e.path, what)
	}
	if e.kind == ErrInvalidArgument {
		what = "the server refused the request's arguments; sending it again cannot help"
	}
	return fmt.Sprintf("zkrecipes: %s %s: %v: %s", e.op, e.path, e.cause, what)
}
func (e *replyError) Unwrap() error        { return e.cause }
func (e *replyError) Is(target error) bool { return target == e.kind }
