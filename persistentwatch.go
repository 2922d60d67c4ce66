package zkrecipes

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/zkrecipes/zkrecipes/internal/wire"
)

// PersistentWatch follows the changes to a node, or to a whole subtree,
// with one watch on the server that stays set as it fires (ZooKeeper 3.6's
// addWatch, like Curator's PersistentWatcher): no re-arming after each
// notification, and so no change missed between a notification and the
// next watch.
//
// Events delivers the changes in the order the server made them, until
// Close, the Session's Close, or a failure (see Err); then it is closed.
// A node watch (the default) reports the node's creation, data changes and
// deletion, and changes to its list of children; a recursive watch
// (WithRecursive) reports the creation, data changes and deletion of the
// node and of every node below it (not children-list changes: a child's
// creation or deletion says as much).
//
// A watch lives on one connection. After every reconnection, and on the
// new session after an expiry, the watch is set again and, before any
// change seen on the new connection, Events delivers WatchReset: changes
// made while the connection was down may have been missed, so a reader
// that mirrors the tree reads it again then. WatchReset also follows a
// backlog (see WithWatchBacklog) the reader let grow too long.
//
// A PersistentWatch needs the wire layer of a Session made by Connect
// (WithWireLayer(true), the default) and ZooKeeper 3.6 or later; otherwise
// Start returns ErrPersistentWatchUnsupported, and the reader falls back to
// one-shot watches (WatchData, WatchChildren, TreeCache).
//
// Several watchers on one path: a Session may hold any mix of
// PersistentWatch (node or recursive), TreeCache, NodeCache, WatchData and
// WatchChildren on one path, started and closed in any order, and each
// reports every change it reports alone, across reconnections and new
// sessions. On ZooKeeper 3.9 and later each is a watch of its own on the
// server. Before 3.9 the server keeps one watch per Session and path, and
// the watchers of a path share it, at a cost: while any of them is
// recursive, the Session receives the whole subtree's notifications, and a
// node watch there learns of its children's changes from their creations
// and deletions (a child the Session may not read then goes unreported);
// the watch stays on the server until the last watcher on the path
// closes; and a one-shot watch set on the path (WatchData, WatchChildren,
// go-zookeeper's GetW, ExistsW, ChildrenW) may be followed by a WatchReset
// on each persistent watch there, when anything was written on the
// ensemble while it was set.
//
// NewPersistentWatch does no I/O. A PersistentWatch is safe for concurrent
// use. It starts once; no goroutine of it is left after Close (or the
// Session's Close) returns.
type PersistentWatch struct {
	s         *Session
	path      string
	abs       string
	recursive bool
	backlog   int
	err       error // from construction: reported by Start

	events chan WatchEvent
	// batches, when set (a cache's watch, see openCacheWatch), takes the
	// place of events: the dispatcher hands over all the events waiting,
	// up to maxBatch, at once.
	batches chan []WatchEvent
	ww      *wire.Watch   // the watch on the wire layer, once started
	wake    chan struct{} // the dispatcher has events to deliver
	done    chan struct{} // closed once the dispatcher has ended (and closed events)

	mu       sync.Mutex
	started  bool
	closed   bool
	stopErr  error
	cancel   context.CancelFunc // ends the dispatcher
	queue    []WatchEvent       // events not yet delivered
	overflow bool               // events were dropped: a WatchReset is owed
}

// WatchEventKind says what a WatchEvent reports.
type WatchEventKind int

const (
	// WatchNodeCreated: the node at Path was created.
	WatchNodeCreated WatchEventKind = iota + 1
	// WatchNodeDeleted: the node at Path was deleted.
	WatchNodeDeleted
	// WatchDataChanged: the data of the node at Path changed.
	WatchDataChanged
	// WatchChildrenChanged: a child of the node at Path was created or
	// deleted (node watches only).
	WatchChildrenChanged
	// WatchReset: the watch was set again (after a reconnection, on a new
	// session, or after a backlog the reader let grow too long): changes
	// may have been missed before it; Reset says why.
	WatchReset
)

func (k WatchEventKind) String() string {
	switch k {
	case WatchNodeCreated:
		return "NODE_CREATED"
	case WatchNodeDeleted:
		return "NODE_DELETED"
	case WatchDataChanged:
		return "DATA_CHANGED"
	case WatchChildrenChanged:
		return "CHILDREN_CHANGED"
	case WatchReset:
		return "RESET"
	}
	return fmt.Sprintf("WatchEventKind(%d)", int(k))
}

// ResetReason says why a WatchReset came.
type ResetReason int

const (
	// ResetReconnected: the connection was lost and is back under the same
	// ZooKeeper session; the watch is set again on the new connection.
	ResetReconnected ResetReason = iota + 1
	// ResetNewSession: the ZooKeeper session was lost (expired) and the
	// watch is set in the new one.
	ResetNewSession
	// ResetOverflow: the reader fell further behind than the backlog
	// allows; the changes in between were dropped.
	ResetOverflow
)

func (r ResetReason) String() string {
	switch r {
	case ResetReconnected:
		return "RECONNECTED"
	case ResetNewSession:
		return "NEW_SESSION"
	case ResetOverflow:
		return "OVERFLOW"
	}
	return fmt.Sprintf("ResetReason(%d)", int(r))
}

// WatchEvent is one event of a PersistentWatch.
type WatchEvent struct {
	Kind WatchEventKind
	// Path is the node the event is about, relative to the Session's
	// namespace; for WatchReset, the watch's path.
	Path string
	// Zxid is the transaction that made the change, on servers that say
	// (ZooKeeper 3.9 and later); 0 otherwise and for WatchReset.
	Zxid int64
	// Reset says why a WatchReset came (0 for the other kinds).
	Reset ResetReason
	// SessionID is, for WatchReset, the ZooKeeper session the watch is set
	// in now (0 for ResetOverflow and for the other kinds).
	SessionID int64
}

// PersistentWatchOption configures NewPersistentWatch.
type PersistentWatchOption func(*PersistentWatch)

// WithRecursive makes the watch cover the node's whole subtree
// (ZooKeeper's PERSISTENT_RECURSIVE mode) instead of the node alone.
// Default: false (the node alone).
func WithRecursive(on bool) PersistentWatchOption {
	return func(w *PersistentWatch) { w.recursive = on }
}

// WithWatchBacklog sets how many events may wait for the reader: beyond
// that, events are dropped and a WatchReset with ResetOverflow follows
// once the reader has taken those that wait. It must be positive.
// Default: 65536.
func WithWatchBacklog(n int) PersistentWatchOption {
	return func(w *PersistentWatch) {
		if n <= 0 && w.err == nil {
			w.err = invalidArg("watch backlog %d must be positive", n)
		}
		w.backlog = n
	}
}

// defaultWatchBacklog is WithWatchBacklog's default.
const defaultWatchBacklog = 1 << 16

// NewPersistentWatch returns a watch on the node at path (relative to the
// Session's namespace), which need not exist. It does no I/O; an invalid
// path, option or a nil session is reported by Start.
func NewPersistentWatch(s *Session, path string, opts ...PersistentWatchOption) *PersistentWatch {
	w := &PersistentWatch{s: s, path: path, backlog: defaultWatchBacklog, events: make(chan WatchEvent),
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	for _, o := range opts {
		if o == nil {
			if w.err == nil {
				w.err = invalidArg("nil PersistentWatchOption")
			}
			continue
		}
		o(w)
	}
	if err := checkWatched(s, path); err != nil && w.err == nil {
		w.err = err
	}
	if w.err == nil {
		w.abs = s.abs(path)
	}
	return w
}

// Path returns the watched path, as given.
func (w *PersistentWatch) Path() string { return w.path }

// Recursive reports whether the watch covers the node's subtree.
func (w *PersistentWatch) Recursive() bool { return w.recursive }

// Start sets the watch on the server and returns once it is set: every
// change made after Start returns is delivered on Events. While the
// connection is down, Start waits for it to come back. It fails with
// ErrPersistentWatchUnsupported when the Session has no wire layer or the
// server predates ZooKeeper 3.6 (a 3.5 server also drops the connection
// on the request it does not know; the Session reconnects), with
// ErrCacheStarted when started before (and ErrClosed too when closed),
// ErrInvalidPath or ErrInvalidArgument for bad arguments, ErrClosed when
// the Session is closed, the Session's error (see Err) at once when it is
// lost for good, and ctx's error if ctx ends first; after a failure the
// watch is closed, and nothing of it is left on the server.
func (w *PersistentWatch) Start(ctx context.Context) error {
	if w.err != nil {
		return w.err
	}
	if ctx == nil {
		return invalidArg("nil context")
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return &startAfterClose{once: ErrCacheStarted}
	}
	if w.started {
		w.mu.Unlock()
		return ErrCacheStarted
	}
	w.started = true
	s := w.s
	if s.wire == nil {
		w.closed = true
		w.mu.Unlock()
		close(w.events)
		close(w.done)
		return ErrPersistentWatchUnsupported
	}
	run, cancel := s.untilEnded()
	w.cancel = cancel
	w.ww = &wire.Watch{Path: w.abs, Recursive: w.recursive, OnEvent: w.onEvent, OnReset: w.onReset, OnFail: w.onFail}
	w.mu.Unlock()
	if !s.spawn(func() { w.dispatch(run) }) {
		cancel()
		w.mu.Lock()
		w.closed, w.ww = true, nil
		w.mu.Unlock()
		close(w.events)
		close(w.done)
		return ErrClosed
	}
	code, err := call(ctx, s, "addWatch", w.abs, func() (int32, error) {
		code, err := s.wire.AddWatch(run, w.ww)
		if err != nil && s.isClosed() {
			err = ErrClosed
		}
		return code, err
	}, nil)
	if err == nil && code != wire.CodeOK {
		err = watchCodeError("addWatch", code)
	}
	if err == nil && w.isClosed() {
		err = ErrClosed // a Close came while the watch was being set, and took it off
	}
	if err != nil {
		if errors.Is(err, wire.ErrRemoved) || (run.Err() != nil && ctx.Err() == nil) {
			err = s.endErr() // Close, the Session's, or its loss for good cut Start short
		}
		_ = w.Close(context.Background()) // its removal waits at most 2/3 of the session timeout
		return s.opError("addWatch", w.abs, err)
	}
	return nil
}

func (w *PersistentWatch) isClosed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed
}

// watchCodeError is the error of a server's error code to addWatch or
// removeWatches.
func watchCodeError(op string, code int32) error {
	if code == wire.CodeUnimplemented {
		return ErrPersistentWatchUnsupported
	}
	return fmt.Errorf("zkrecipes: %s refused by the server: error code %d", op, code)
}

// Events delivers the watch's events in order. It is closed once the
// watch stops: after Close, the Session's Close, or a failure (Err).
func (w *PersistentWatch) Events() <-chan WatchEvent { return w.events }

// Err returns why the watch stopped on its own: ErrClosed after the
// Session's Close; the Session's error once it is lost for good, a
// failure reconnecting cannot mend (it matches ErrAuthFailed,
// ErrSASLRequired, ErrTLSRefused or ErrTLSUntrusted, as Session.Err does);
// ErrPersistentWatchUnsupported if the Session reconnected to a server
// that predates ZooKeeper 3.6. It is nil while the watch runs and after
// Close.
func (w *PersistentWatch) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stopErr
}

// Close stops the watch: it removes the watch from the server (a
// removeWatches of the persistent kind, so that the Session's other
// watches on the path stay), closes Events and waits for the watch's
// goroutines. It waits for the server's reply within ctx; the removal
// itself waits at most two thirds of the session timeout (the time the
// Session takes to give up on a silent connection), and a watch whose
// connection is lost is gone from the server with it. It returns nil once
// the watch is gone from the server (or never was set); ErrReleaseDeferred
// (wrapping ctx's error) when ctx ends first, the removal going on in the
// Session's background; else an error that says what may be left. Close is
// idempotent and safe to call concurrently: later calls wait within their
// ctx for the first to end (ErrReleaseDeferred if it ends first) and return
// nil.
//
// A server before ZooKeeper 3.9 cannot remove a persistent watch alone
// (ZOOKEEPER-4472): there Close removes every watch of the Session on the
// watch's path (not below it) and sets the Session's one-shot watches on
// that path again at once, so they stay and still fire. Where other
// watchers of the Session are on the path, Close there removes nothing:
// the watch stays for them (see PersistentWatch).
func (w *PersistentWatch) Close(ctx context.Context) error {
	if ctx == nil {
		return invalidArg("nil context")
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		select {
		case <-w.done:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("%w: persistent watch on %s: %w", ErrReleaseDeferred, w.path, ctx.Err())
		}
	}
	w.closed = true
	if !w.started {
		w.started = true
		w.mu.Unlock()
		close(w.events)
		close(w.done)
		return nil
	}
	cancel, ww := w.cancel, w.ww
	w.mu.Unlock()
	var err error
	if ww != nil {
		// The removal runs on the Session's background, which its Close
		// waits for, so that it goes on when ctx ends first.
		res := make(chan error, 1)
		rm := func(bg context.Context) {
			err := w.remove(bg, ww)
			res <- err
			if err != nil && ctx.Err() != nil { // Close may have returned ErrReleaseDeferred already
				w.s.cfg.log.Warn("zkrecipes: persistent watch's removal after Close failed", "path", w.path, "err", err)
			}
		}
		if !w.s.goBackground(0, rm) {
			rm(context.Background()) // the Session is closed: remove only forgets
		}
		select {
		case err = <-res:
		case <-ctx.Done():
			err = fmt.Errorf("%w: persistent watch on %s: its removal goes on: %w", ErrReleaseDeferred, w.path, ctx.Err())
		}
	}
	if cancel != nil {
		cancel()
	}
	<-w.done
	return err
}

// remove takes ww off the wire layer and the server, waiting within ctx
// and at most two thirds of the session timeout.
func (w *PersistentWatch) remove(ctx context.Context, ww *wire.Watch) error {
	s := w.s
	if s.ended() {
		s.wire.Forget(ww) // the connection is closing: the watch ends with it
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.grantedTimeout()*2/3)
	defer cancel()
	code, err := traced(s, "removeWatches", w.abs, func() (int32, error) { return s.wire.RemoveWatch(ctx, ww) })
	if err == nil && code != wire.CodeOK {
		err = watchCodeError("removeWatches", code)
	}
	if err != nil {
		return fmt.Errorf("zkrecipes: persistent watch on %s: not confirmed removed; it stays on the server at most until the connection ends: %w", w.path, err)
	}
	return nil
}

// onEvent queues a notification (the connection's reading goroutine: it
// must not block).
func (w *PersistentWatch) onEvent(n wire.Notification) {
	kind := WatchEventKind(n.Type) // wire types 1..4 are the kinds 1..4
	zxid := max(n.Zxid, 0)
	w.push(WatchEvent{Kind: kind, Path: w.s.rel(n.Path), Zxid: zxid}, false)
}

// onReset queues a WatchReset: the watch is set on a new connection.
func (w *PersistentWatch) onReset(sid int64, newSession bool) {
	r := ResetReconnected
	if newSession {
		r = ResetNewSession
	}
	w.push(WatchEvent{Kind: WatchReset, Path: w.path, Reset: r, SessionID: sid}, true)
}

// onFail stops the watch: a server refused to set it again.
func (w *PersistentWatch) onFail(code int32) {
	w.mu.Lock()
	if !w.closed && w.stopErr == nil {
		w.stopErr = watchCodeError("addWatch", code)
	}
	cancel := w.cancel
	w.mu.Unlock()
	cancel()
}

// push queues ev for the reader, beyond the backlog only if always.
func (w *PersistentWatch) push(ev WatchEvent, always bool) {
	w.mu.Lock()
	switch {
	case w.closed:
	case !always && (w.overflow || len(w.queue) >= w.backlog):
		w.overflow = true
	default:
		w.queue = append(w.queue, ev)
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// next takes the next event to deliver: the queue's head, or the
// WatchReset owed for an overflow once the queue is empty.
func (w *PersistentWatch) next() (WatchEvent, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) > 0 {
		ev := w.queue[0]
		w.queue[0] = WatchEvent{}
		w.queue = w.queue[1:]
		if len(w.queue) == 0 {
			w.queue = nil // let the array go
		}
		return ev, true
	}
	if w.overflow {
		w.overflow = false
		return WatchEvent{Kind: WatchReset, Path: w.path, Reset: ResetOverflow}, true
	}
	return WatchEvent{}, false
}

// nextBatch takes the events to deliver, up to maxBatch, in order: the
// queue's head, or the WatchReset owed for an overflow once the queue is
// empty. The reader owns the slice.
func (w *PersistentWatch) nextBatch() []WatchEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := min(len(w.queue), maxBatch); n > 0 {
		b := w.queue[:n:n] // appends to the rest reallocate or write past it
		w.queue = w.queue[n:]
		if len(w.queue) == 0 {
			w.queue = nil
		}
		return b
	}
	if w.overflow {
		w.overflow = false
		return []WatchEvent{{Kind: WatchReset, Path: w.path, Reset: ResetOverflow}}
	}
	return nil
}

// dispatch delivers the events until run ends, then closes Events.
func (w *PersistentWatch) dispatch(run context.Context) {
	defer close(w.done)
	defer close(w.events)
	if w.batches != nil {
		defer close(w.batches)
	}
	defer func() {
		if w.s.ended() {
			w.s.wire.Forget(w.ww) // the connection ends, and the watch with it
			w.mu.Lock()
			if !w.closed && w.stopErr == nil {
				w.stopErr = w.s.endErr()
			}
			w.mu.Unlock()
		}
	}()
	for w.batches != nil {
		b := w.nextBatch()
		if b == nil {
			select {
			case <-w.wake:
				continue
			case <-run.Done():
				return
			}
		}
		select {
		case w.batches <- b:
		case <-run.Done():
			return
		}
	}
	for {
		ev, ok := w.next()
		if !ok {
			select {
			case <-w.wake:
				continue
			case <-run.Done():
				return
			}
		}
		select {
		case w.events <- ev:
		case <-run.Done():
			return
		}
	}
}
