package zkrecipes

import (
	"context"
	"fmt"
	"sync"
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

	mu      sync.Mutex
	started bool
	closed  bool
	stopErr error
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
	w := &PersistentWatch{s: s, path: path, backlog: defaultWatchBacklog, events: make(chan WatchEvent)}
	for _, o := range opts {
		if o == nil {
			if w.err == nil {
				w.err = invalidArg("nil PersistentWatchOption")
			}
			continue
		}
		o(w)
	}
	if err := checkRecipe(s, path); err != nil && w.err == nil {
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
// change made after Start returns is delivered on Events. It fails with
// ErrPersistentWatchUnsupported when the Session has no wire layer or the
// server predates ZooKeeper 3.6, ErrCacheStarted when started before (and
// ErrClosed too when closed), ErrInvalidPath or ErrInvalidArgument for
// bad arguments, and ctx's error if ctx ends first; after a failure the
// watch is closed (and nothing is left on the server).
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
	w.mu.Unlock()
	if w.s.wire == nil {
		w.Close()
		return ErrPersistentWatchUnsupported
	}
	w.Close()
	return ErrPersistentWatchUnsupported // the wire layer's own requests come next
}

// Events delivers the watch's events in order. It is closed once the
// watch stops: after Close, the Session's Close, or a failure (Err).
func (w *PersistentWatch) Events() <-chan WatchEvent { return w.events }

// Err returns why the watch stopped on its own: ErrClosed after the
// Session's Close, ErrPersistentWatchUnsupported if the Session
// reconnected to a server that predates ZooKeeper 3.6. It is nil while
// the watch runs and after Close.
func (w *PersistentWatch) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stopErr
}

// Close stops the watch: it removes the watch from the server (a
// removeWatches of the persistent kind, so that the Session's other
// watches on the path stay), closes Events and waits for the watch's
// goroutines. It does I/O yet takes no context: it waits for the server's
// reply at most as long as the Session takes to declare its connection
// lost (two thirds of the session timeout), and a watch whose connection
// is lost is gone from the server with it. It returns nil once the watch
// is gone from the server (or never was set); otherwise the error says
// what may be left. Close is idempotent; later calls return nil.
func (w *PersistentWatch) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed, w.started = true, true
	close(w.events)
	return nil
}
