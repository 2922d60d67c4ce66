package zkrecipes

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"
)

// NodeStat is a node's metadata as ZooKeeper keeps it (its Stat), in
// this package's terms so that callers need not import go-zookeeper.
type NodeStat struct {
	Czxid          int64     // zxid of the create: a new value means a new node
	Mzxid          int64     // zxid of the last data change (the create's at first)
	Pzxid          int64     // zxid of the last change to the children
	Created        time.Time // when the node was created (the server's clock)
	Modified       time.Time // when its data last changed
	Version        int32     // data version: the number of data changes
	Cversion       int32     // number of changes to its children
	Aversion       int32     // number of changes to its ACL
	EphemeralOwner int64     // session that owns an ephemeral node; 0 for others
	DataLength     int32     // length of its data, in bytes
	NumChildren    int32     // number of children
}

func newNodeStat(st *zk.Stat) *NodeStat {
	if st == nil {
		return nil
	}
	return &NodeStat{Czxid: st.Czxid, Mzxid: st.Mzxid, Pzxid: st.Pzxid,
		Created: time.UnixMilli(st.Ctime), Modified: time.UnixMilli(st.Mtime),
		Version: st.Version, Cversion: st.Cversion, Aversion: st.Aversion,
		EphemeralOwner: st.EphemeralOwner, DataLength: st.DataLength, NumChildren: st.NumChildren}
}

// WatchData calls fn with the data and Stat of the node at path (relative
// to the Session's namespace), then again after every change, until ctx
// ends or fn returns an error. It then returns ctx's error, fn's error,
// ErrClosed when the Session closes, or the error that made reading
// impossible (ErrInvalidPath, ErrNilSession, ErrInvalidArgument before
// any call; a ZooKeeper error such as zk.ErrNoAuth).
//
// A node that does not exist is reported with nil data and a nil stat,
// and its creation is watched for. Such a watch stays registered on the
// server until the node is created or the ZooKeeper session ends, even
// after WatchData returns: go-zookeeper cannot remove it (a cache on a
// persistent watch, NodeCache, removes its watch on Close).
//
// fn runs on the caller's goroutine, one call at a time, and never blocks
// the Session: changes made while fn runs, or while the connection is
// down, are coalesced. fn may miss intermediate values but always sees
// the last one, and the stats it sees never go back: each has a larger
// Mzxid than the one before, and a node deleted and created again shows
// a new Czxid. After a reconnection or a session expiry the node is read
// again, and fn is called if it changed meanwhile. The data passed to fn
// is its own; fn may keep it.
func WatchData(ctx context.Context, s *Session, path string, fn func(data []byte, stat *NodeStat) error) error {
	if err := checkWatch(ctx, s, path, fn == nil); err != nil {
		return err
	}
	abs := s.abs(path)
	return follow(ctx, s, func(ctx context.Context) (nodeData, <-chan zk.Event, error) {
		return s.readData(ctx, abs)
	}, newerData, nil, func(n nodeData) error {
		return fn(n.data, newNodeStat(n.stat))
	})
}

// WatchChildren calls fn with the sorted names of the children of the
// node at path and the node's Stat, then again after every change to the
// set of children, until ctx ends or fn returns an error; it returns as
// WatchData does. Changes to the node's data, or to the children's, do not
// call fn.
//
// A node that does not exist is reported with nil children and a nil
// stat, and its creation is watched for (a watch that stays on the server
// until then, as with WatchData). fn runs as WatchData's does: on the
// caller's goroutine, one call at a time, never blocking the Session, on
// coalesced changes, never on a listing older than the one before (each
// stat has a larger Pzxid, or a new Czxid), the last listing always
// delivered.
func WatchChildren(ctx context.Context, s *Session, path string, fn func(children []string, stat *NodeStat) error) error {
	if err := checkWatch(ctx, s, path, fn == nil); err != nil {
		return err
	}
	abs := s.abs(path)
	return follow(ctx, s, func(ctx context.Context) (nodeChildren, <-chan zk.Event, error) {
		return s.readChildren(ctx, abs)
	}, newerChildren, nil, func(n nodeChildren) error {
		return fn(n.children, newNodeStat(n.stat))
	})
}

func checkWatch(ctx context.Context, s *Session, path string, nilFn bool) error {
	if err := checkWatched(s, path); err != nil {
		return err
	}
	if ctx == nil {
		return invalidArg("nil context")
	}
	if nilFn {
		return invalidArg("nil watch function")
	}
	return nil
}

// follow is the one watch loop of the package: read the node with a watch
// (read), hand what it read to fn when it is newer than what fn last got
// (newer; the first read always), then wait until the watch fires or the
// Session reconnects, and read again. State changes go to onState (if
// non-nil) on the same goroutine, in order with the reads.
//
// A reconnection is followed by a read because a notification can be lost
// with the connection; a session expiry ends every watch (go-zookeeper
// closes their channels), which also leads to a read, once connected.
// Reads in one ZooKeeper session never go back in time, and newer drops a
// read that would: what fn sees is in zxid order.
func follow[T any](ctx context.Context, s *Session, read func(context.Context) (T, <-chan zk.Event, error),
	newer func(last, cur T) bool, onState func(StateChange), fn func(T) error) error {
	states, cancel := s.subscribe()
	defer cancel()
	var last T
	first := true
	for {
		cur, w, err := read(ctx)
		if err != nil {
			return err
		}
		if first || newer(last, cur) {
			first, last = false, cur
			if err := fn(cur); err != nil {
				return err
			}
		}
		if err := awaitChange(ctx, w, states, onState); err != nil {
			return err
		}
	}
}

// awaitChange waits until the watch w fires or the Session connects again.
func awaitChange(ctx context.Context, w <-chan zk.Event, states <-chan StateChange, onState func(StateChange)) error {
	for {
		select {
		case <-w:
			return nil
		case c, ok := <-states:
			if !ok || c.State == StateClosed {
				return ErrClosed
			}
			if onState != nil {
				onState(c)
			}
			if c.State == StateReconnected {
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// nodeData is one read of a node's data: stat nil when it does not exist.
type nodeData struct {
	data []byte
	stat *zk.Stat
}

// newerData tells whether cur is a change from last: a node created or
// deleted, or data written since (a larger mzxid; a node created again
// has a larger one too).
func newerData(last, cur nodeData) bool {
	if last.stat == nil || cur.stat == nil {
		return (last.stat == nil) != (cur.stat == nil)
	}
	return cur.stat.Mzxid > last.stat.Mzxid
}

// nodeChildren is one listing of a node: stat nil when it does not exist.
type nodeChildren struct {
	children []string
	stat     *zk.Stat
}

// newerChildren tells whether cur is a change from last: a node created,
// deleted or created again, or children changed since (a larger pzxid).
func newerChildren(last, cur nodeChildren) bool {
	if last.stat == nil || cur.stat == nil {
		return (last.stat == nil) != (cur.stat == nil)
	}
	return cur.stat.Czxid > last.stat.Czxid || (cur.stat.Czxid == last.stat.Czxid && cur.stat.Pzxid > last.stat.Pzxid)
}

// readData reads the node at abs with a data watch or, when it does not
// exist, sets an exists watch that fires on its creation. A lost
// connection or session is waited out.
func (s *Session) readData(ctx context.Context, abs string) (nodeData, <-chan zk.Event, error) {
	for {
		data, st, w, err := s.getW(ctx, abs)
		if err == zk.ErrNoNode {
			var ok bool
			ok, w, err = s.existsW(ctx, abs)
			if err == nil && ok {
				continue // created meanwhile: read it
			}
		}
		if err == nil {
			return nodeData{data: data, stat: st}, w, nil
		}
		if err = s.waitOut(ctx, "getData", abs, err); err != nil {
			return nodeData{}, nil, err
		}
	}
}

// readChildren lists the node at abs with a children watch or, when it
// does not exist, sets an exists watch. A lost connection or session is
// waited out.
func (s *Session) readChildren(ctx context.Context, abs string) (nodeChildren, <-chan zk.Event, error) {
	for {
		kids, st, w, err := s.childrenStatW(ctx, abs)
		if err == zk.ErrNoNode {
			var ok bool
			ok, w, err = s.existsW(ctx, abs)
			if err == nil && ok {
				continue
			}
		}
		if err == nil {
			slices.Sort(kids)
			return nodeChildren{children: kids, stat: st}, w, nil
		}
		if err = s.waitOut(ctx, "getChildren", abs, err); err != nil {
			return nodeChildren{}, nil, err
		}
	}
}

// waitOut waits until the Session is connected again after a read failed
// with a lost connection or session; any other error is returned.
func (s *Session) waitOut(ctx context.Context, op, abs string, err error) error {
	if isRetryable(err) || errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrClosing) {
		_, _, werr := s.awaitConnected(ctx)
		return werr
	}
	return s.opError(op, abs, err)
}
