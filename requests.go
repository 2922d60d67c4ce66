package zkrecipes

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/wire"
)

// The requests recipes issue. Each returns ctx's error as soon as ctx ends,
// while the request (go-zookeeper cannot cancel one) finishes on a worker
// that Close waits for. Each passes tracedCtx, which refuses a path too
// long for any request before sending it, reports the request to the
// Tracer and Observer, and types a refusal (refused.go). This file holds
// the only calls of the connection's read methods (getData, getChildren,
// exists, sync; TestEveryReadGoesThroughTheSeam fails otherwise), as
// writes.go holds its writes: recipes read through call, send or traced
// with the functions below.

// call runs fn as operation op on path. When ctx ends first, the result
// is handed to abandon (if non-nil) when it arrives, so that a create whose
// caller gave up can be undone.
func call[T any](ctx context.Context, s *Session, op, path string, fn func() (T, error), abandon func(T, error)) (T, error) {
	var zero T
	if ctx == nil {
		return zero, invalidArg("nil context")
	}
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	s.opsMu.RLock()
	if s.isClosed() {
		s.opsMu.RUnlock()
		return zero, ErrClosed
	}
	run := func() (T, error) { return tracedCtx(ctx, s, op, path, fn) }
	if ctx.Done() == nil {
		s.wg.Add(1)
		s.opsMu.RUnlock()
		defer s.wg.Done()
		return run()
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	// Whoever comes second of the reply and the caller's giving up decides:
	// a reply to a caller that gave up is handed to abandon, on the
	// worker the Session already counts.
	const pending, delivered, givenUp = 0, 1, 2
	var state atomic.Int32
	s.startLocked(func() {
		v, err := run()
		ch <- result{v, err}
		if !state.CompareAndSwap(pending, delivered) && abandon != nil {
			abandon(v, err)
		}
	})
	s.opsMu.RUnlock()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		if !state.CompareAndSwap(pending, givenUp) {
			r := <-ch // the reply came first after all
			return r.v, r.err
		}
		return zero, ctx.Err()
	}
}

// traced runs fn and reports it to the Session's Tracer and Observer as
// operation op on path, issued by the recipe on its own.
func traced[T any](s *Session, op, path string, fn func() (T, error)) (T, error) {
	return tracedCtx(context.Background(), s, op, path, fn)
}

// tracedCtx is traced for a request issued under the caller's ctx.
func tracedCtx[T any](ctx context.Context, s *Session, op, path string, fn func() (T, error)) (T, error) {
	start := time.Now()
	v, err := checked(s, op, path, fn)
	if s.cfg.obs != nil {
		s.reportOp(ctx, op, path, start, err) // observe.go
	}
	return v, err
}

// checked runs request fn on path: its size checked before, its error
// typed after; traced and housekeeping report it or not.
func checked[T any](s *Session, op, path string, fn func() (T, error)) (T, error) {
	var v T
	err := s.checkRequestPath(path) // requestsize.go
	if err == nil {
		v, err = fn()
	}
	err = s.refusal(op, path, s.saslRequired(connLost(err)))
	if err != nil && s.fatal != nil && s.fatal.fired() && errors.Is(err, zk.ErrConnectionClosed) {
		// The Session ended on a failure no redial can mend (a server
		// that requires SASL, say) and the connection's close cut this
		// request short, perhaps before its own reply said so: say why.
		// As a request Close cut short (errCutShort), it may have been
		// applied: a write's caller reports its outcome unknown.
		err = &cutShortError{reason: fmt.Errorf("%w (%s %s: %v)", s.fatal.err, op, path, err)}
	}
	if err != nil && s.isClosed() && errors.Is(err, zk.ErrConnectionClosed) {
		// Close cut the request short: the Session is closed, not cut off,
		// and no retry loop may wait for a reconnection; but a write may
		// have been applied (errCutShort).
		err = errCutShort
	}
	return v, err
}

// readConfig reads ConfigPath and sets a data watch on it, for the
// Session's following of its ensemble (ensembletrack.go). The request is
// the Session's own housekeeping, as go-zookeeper's pings and SetWatches
// are, not an operation of the caller's: it is checked and typed as every
// request is, but not reported to the Tracer or the Observer. It returns
// once the reply comes, or ctx's error when ctx ends first (the request
// then completes in the background).
func (s *Session) readConfig(ctx context.Context) ([]byte, <-chan zk.Event, error) {
	ch := make(chan reply[getResult], 1)
	if !s.spawn(func() {
		r, err := checked(s, "getData", ConfigPath, s.getReq(ConfigPath, true))
		ch <- reply[getResult]{r, err}
	}) {
		return nil, nil, ErrClosed
	}
	r, err := await(ctx, ch)
	return r.data, r.watch, err
}

// reply is the outcome of a request sent with send.
type reply[T any] struct {
	v   T
	err error
}

// send runs fn as operation op on path on a worker and returns the
// buffered channel its reply arrives on (a caller may stop waiting). Sent
// requests run in no particular order: send suits independent reads. The
// request is reported under ctx (an acquisition's, so that its span hangs
// under the acquisition's), which does not cancel it.
func send[T any](ctx context.Context, s *Session, op, path string, fn func() (T, error)) <-chan reply[T] {
	ch := make(chan reply[T], 1)
	if !s.spawn(func() {
		v, err := tracedCtx(ctx, s, op, path, fn)
		ch <- reply[T]{v, err}
	}) {
		ch <- reply[T]{err: ErrClosed}
	}
	return ch
}

// await returns the reply that arrives on ch, or ctx's error if ctx ends
// first.
func await[T any](ctx context.Context, ch <-chan reply[T]) (T, error) {
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// watched is a node's Stat and a watch set on the node.
type watched struct {
	stat *zk.Stat
	w    <-chan zk.Event
}

// deletionWatch is the request of watchDeletion.
func (s *Session) deletionWatch(path string) func() (watched, error) {
	return func() (watched, error) {
		_, st, w, err := s.conn.ChildrenW(path)
		return watched{st, w}, err
	}
}

// getReq is the getData request on path, with a data watch when watch is
// set: run it inside call, send or traced.
func (s *Session) getReq(path string, watch bool) func() (getResult, error) {
	return func() (getResult, error) {
		if !watch {
			d, st, err := s.conn.Get(path)
			return getResult{data: d, stat: st}, err
		}
		d, st, w, err := s.conn.GetW(path)
		return getResult{data: d, stat: st, watch: w}, err
	}
}

// childrenResult is the reply to a getChildren request.
type childrenResult struct {
	kids  []string
	stat  *zk.Stat
	watch <-chan zk.Event
}

// childrenReq is the getChildren request on path, with a children watch
// when watch is set: run it inside call, send or traced.
func (s *Session) childrenReq(path string, watch bool) func() (childrenResult, error) {
	return func() (childrenResult, error) {
		if !watch {
			c, st, err := s.conn.Children(path)
			return childrenResult{kids: c, stat: st}, err
		}
		c, st, w, err := s.conn.ChildrenW(path)
		return childrenResult{kids: c, stat: st, watch: w}, err
	}
}

// sync makes the server the Session is connected to catch up with the
// leader on path before the Session's next read.
func (s *Session) sync(ctx context.Context, path string) error {
	_, err := call(ctx, s, "sync", path, func() (string, error) { return s.conn.Sync(path) }, nil)
	return err
}

// watchDeletionAsync is watchDeletion sent with send, reported under ctx.
func (s *Session) watchDeletionAsync(ctx context.Context, path string) <-chan reply[watched] {
	return send(ctx, s, "getChildren", path, s.deletionWatch(path))
}

// getWAsync is getW, without the data, sent with send, reported under ctx.
func (s *Session) getWAsync(ctx context.Context, path string) <-chan reply[watched] {
	return send(ctx, s, "getData", path, func() (watched, error) {
		_, st, w, err := s.conn.GetW(path)
		return watched{st, w}, err
	})
}

func (s *Session) isClosed() bool {
	select {
	case <-s.closedCh:
		return true
	default:
		return false
	}
}

type getResult struct {
	data  []byte
	stat  *zk.Stat
	watch <-chan zk.Event
}

func (s *Session) get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	r, err := call(ctx, s, "getData", path, func() (getResult, error) {
		d, st, err := s.conn.Get(path)
		return getResult{data: d, stat: st}, err
	}, nil)
	return r.data, r.stat, err
}

// getW reads path and sets a data watch on it. When the node does not
// exist it returns zk.ErrNoNode and leaves no watch behind (getData, unlike
// exists, sets none on a missing node).
func (s *Session) getW(ctx context.Context, path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	r, err := call(ctx, s, "getData", path, func() (getResult, error) {
		d, st, w, err := s.conn.GetW(path)
		return getResult{data: d, stat: st, watch: w}, err
	}, nil)
	return r.data, r.stat, r.watch, err
}

func (s *Session) children(ctx context.Context, path string) ([]string, error) {
	kids, _, err := s.childrenStat(ctx, path)
	return kids, err
}

// childrenStat lists path's children and returns its Stat.
func (s *Session) childrenStat(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	type res struct {
		c  []string
		st *zk.Stat
	}
	r, err := call(ctx, s, "getChildren", path, func() (res, error) {
		c, st, err := s.conn.Children(path)
		return res{c, st}, err
	}, nil)
	return r.c, r.st, err
}

// watchDeletion reads path's Stat and sets a watch that fires only when the
// node is deleted: a children watch on a node that has no children (an
// ephemeral node never has any), so data changes do not consume it. When
// the node does not exist it returns zk.ErrNoNode and sets no watch.
func (s *Session) watchDeletion(ctx context.Context, path string) (*zk.Stat, <-chan zk.Event, error) {
	r, err := call(ctx, s, "getChildren", path, s.deletionWatch(path), nil)
	return r.stat, r.w, err
}

// childrenStatW lists path's children with its Stat and sets a children
// watch.
func (s *Session) childrenStatW(ctx context.Context, path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	type res struct {
		c  []string
		st *zk.Stat
		w  <-chan zk.Event
	}
	r, err := call(ctx, s, "getChildren", path, func() (res, error) {
		c, st, w, err := s.conn.ChildrenW(path)
		return res{c, st, w}, err
	}, nil)
	return r.c, r.st, r.w, err
}

func (s *Session) childrenW(ctx context.Context, path string) ([]string, <-chan zk.Event, error) {
	kids, _, w, err := s.childrenStatW(ctx, path)
	return kids, w, err
}

func (s *Session) exists(ctx context.Context, path string) (*zk.Stat, error) {
	return call(ctx, s, "exists", path, func() (*zk.Stat, error) {
		ok, st, err := s.conn.Exists(path)
		if err == nil && !ok {
			return nil, zk.ErrNoNode
		}
		return st, err
	}, nil)
}

// existsW tells whether path exists and sets a watch on it: a data watch
// when it exists, else one that fires when it is created (which stays on
// the server until then: go-zookeeper cannot remove a watch).
func (s *Session) existsW(ctx context.Context, path string) (bool, <-chan zk.Event, error) {
	type res struct {
		ok bool
		w  <-chan zk.Event
	}
	r, err := call(ctx, s, "exists", path, func() (res, error) {
		ok, _, w, err := s.conn.ExistsW(path)
		return res{ok, w}, err
	}, nil)
	return r.ok, r.w, err
}

func (s *Session) delete(ctx context.Context, path string) error {
	_, err := call(ctx, s, "delete", path, func() (struct{}, error) {
		return struct{}{}, s.conn.Delete(path, -1)
	}, nil)
	if err == nil || err == zk.ErrNoNode {
		s.disown(path)
	}
	return err
}

// create creates a node. If ctx ends before the reply and the create
// succeeds after all, the node is deleted in the background (an
// ephemeral one is registered as owned first, so that Close deletes it if
// the background delete cannot run).
func (s *Session) create(ctx context.Context, path string, data []byte, flags int32) (string, error) {
	return call(ctx, s, "create", path, func() (string, error) {
		return s.sendCreate(path, data, flags)
	}, func(p string, err error) {
		if err != nil {
			return
		}
		if flags&zk.FlagEphemeral == 0 {
			s.deleteEventually(p, 0) // persistent: logged if the Session closes first
			return
		}
		s.own(p)
		s.deleteEventually(p, s.conn.SessionID())
	})
}

// createShared makes one try at creating the PERSISTENT node path with
// data, and (with parents) its missing ancestors as containers: a node
// other clients share (a counter, a shared value, a barrier). Unlike
// create it never deletes the node when ctx ends after the request was
// sent: another client may have read or written it meanwhile, so the
// caller's outcome is unknown, as after a lost connection. It returns
// zk.ErrNodeExists when the node exists, and other errors as they come.
func (s *Session) createShared(ctx context.Context, path string, data []byte, parents bool) error {
	for {
		_, err := call(ctx, s, "create", path, func() (string, error) {
			return s.sendCreate(path, data, 0)
		}, nil)
		if err != zk.ErrNoNode || !parents {
			return err
		}
		parents = false
		if err := s.ensureParents(ctx, parentPath(path)); err != nil {
			return err
		}
	}
}

func (s *Session) multi(ctx context.Context, path string, ops ...any) ([]zk.MultiResponse, error) {
	return call(ctx, s, "multi", path, func() ([]zk.MultiResponse, error) {
		return s.sendMulti(path, ops...)
	}, nil)
}

// ensureParents creates every missing ancestor of dir, and dir itself, as
// container nodes, which the server deletes once they are empty. It
// creates dir first and goes up only as far as ancestors are missing:
// under existing parents (a per-entity lock's /locks/orders) it costs one
// request, whatever the depth.
func (s *Session) ensureParents(ctx context.Context, dir string) error {
	err := s.createContainer(ctx, dir)
	if err == zk.ErrNoNode && dir != "/" {
		if err = s.ensureParents(ctx, parentPath(dir)); err == nil {
			err = s.createContainer(ctx, dir)
		}
	}
	if err != nil && err != zk.ErrNodeExists {
		return err
	}
	return nil
}

func (s *Session) createContainer(ctx context.Context, p string) error {
	_, err := call(ctx, s, "createContainer", p, func() (string, error) {
		return s.sendCreate(p, nil, zk.FlagContainer) // 0 bytes, as Curator's
	}, nil)
	return err
}

// listing is the reply to a getChildren with the parent's Stat (and the
// children watch, when the listing set one).
type listing struct {
	kids   []string
	parent *zk.Stat
	w      <-chan zk.Event
	err    error
}

// lister lists dir's children with its Stat: plainList, or watchList,
// which also sets a children watch.
type lister func(s *Session, ctx context.Context, dir string) listing

func plainList(s *Session, ctx context.Context, dir string) listing {
	kids, st, err := s.childrenStat(ctx, dir)
	return listing{kids: kids, parent: st, err: err}
}

func watchList(s *Session, ctx context.Context, dir string) listing {
	kids, st, w, err := s.childrenStatW(ctx, dir)
	return listing{kids: kids, parent: st, w: w, err: err}
}

// getACL reads path's ACL and Stat.
func (s *Session) getACL(ctx context.Context, path string) ([]zk.ACL, *zk.Stat, error) {
	type res struct {
		acl []zk.ACL
		st  *zk.Stat
	}
	r, err := call(ctx, s, "getACL", path, func() (res, error) {
		acl, st, err := s.conn.GetACL(path)
		return res{acl, st}, err
	}, nil)
	return r.acl, r.st, err
}

// deleteVersion deletes path if its version is version (-1: any).
func (s *Session) deleteVersion(ctx context.Context, path string, version int32) error {
	return s.deleteVersionLate(ctx, path, version, nil)
}

// deleteVersionLate is deleteVersion that calls late (if not nil) when
// ctx ends while the delete is on its way and it succeeds after all.
func (s *Session) deleteVersionLate(ctx context.Context, path string, version int32, late func()) error {
	var abandon func(struct{}, error)
	if late != nil {
		abandon = func(_ struct{}, err error) {
			if err == nil || err == zk.ErrNoNode {
				s.disown(path)
				late()
			}
		}
	}
	_, err := call(ctx, s, "delete", path, func() (struct{}, error) {
		return struct{}{}, s.conn.Delete(path, version)
	}, abandon)
	if err == nil || err == zk.ErrNoNode {
		s.disown(path)
	}
	return err
}

// ownRead sends a read the wire layer sends itself (opcode op, body the
// request's record) as operation name on path, and returns the reply's
// body. A server's error code comes back as go-zookeeper's error for it
// (ErrServerTooOld for UNIMPLEMENTED); a lost connection as
// zk.ErrConnectionClosed.
func (s *Session) ownRead(ctx context.Context, name, path string, op int32, body []byte) ([]byte, error) {
	if s.wire == nil {
		return nil, fmt.Errorf("%w: %s", ErrNeedsWireLayer, name)
	}
	return call(ctx, s, name, path, func() ([]byte, error) {
		r, err := s.wire.Call(ctx, op, body)
		switch {
		case errors.Is(err, wire.ErrConnLost):
			return nil, &connLostError{cause: err}
		case err != nil:
			return nil, err
		case r.Code != wire.CodeOK:
			return nil, codeError(name, r.Code)
		}
		return r.Body, nil
	}, nil)
}

// codeError is go-zookeeper's error for a server's error code to request
// name.
func codeError(name string, code int32) error {
	switch code {
	case wire.CodeUnimplemented:
		return fmt.Errorf("%w: %s", ErrServerTooOld, name)
	case -101:
		return zk.ErrNoNode
	case -102:
		return zk.ErrNoAuth
	case -8:
		return zk.ErrBadArguments
	case -112:
		return zk.ErrSessionExpired
	case -118:
		return zk.ErrSessionMoved
	}
	return fmt.Errorf("zkrecipes: %s refused by the server: error code %d", name, code)
}
