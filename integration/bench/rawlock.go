package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

// RawLock is the contended floor: the fewest requests any ZooKeeper lock
// that queues EPHEMERAL_SEQUENTIAL nodes can make per acquisition, on raw
// go-zookeeper sessions, run through the same workload as the locks (for
// example Contended with 8 sessions). An acquisition creates its node with
// the getChildren right behind it (sent once the create's frame is
// written), getData-watches the node before it, and holds on that node's
// deletion notification without listing again; the release is one delete.
// Four requests, and a handoff of one delete and one notification, as in
// the floor's chain; unlike the chain, the next acquisitions' creates,
// listings and watches run beside the handoffs, as they do for any lock.
//
// It is not a lock: it takes every deletion of the node before it for a
// release, so a contender that gave up or expired while it waited would
// let the next one in early. In Contended none does (a contender whose
// context ends leaves its node until its session closes, after every
// contender has stopped), and the log check would report it otherwise.
var RawLock = Impl{Name: "floor (raw lock)", Open: openRaw, Watches: func(n int) int { return n }}

type rawLocker struct {
	conn    *zk.Conn
	path    string
	created chan struct{} // a create's frame was written
	node    string        // the node held, after Lock
}

func openRaw(ctx context.Context, servers []string, path string) (Locker, error) {
	created := make(chan struct{}, 1)
	conn, err := connectSignalling(ctx, servers, created)
	if err != nil {
		return nil, err
	}
	if err := ensurePath(conn, path); err != nil {
		conn.Close()
		return nil, err
	}
	return &rawLocker{conn: conn, path: path, created: created}, nil
}

func (l *rawLocker) Lock(ctx context.Context) error {
	drain(l.created)
	type res struct {
		p   string
		err error
	}
	rc := make(chan res, 1)
	go func() {
		p, err := l.conn.Create(l.path+"/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		rc <- res{p, err}
	}()
	var c res
	replied := false
	select {
	case <-l.created:
	case c = <-rc: // the reply came first, or the create failed before it was written
		if c.err != nil {
			return c.err
		}
		replied = true
	}
	kids, _, err := l.conn.Children(l.path)
	if !replied {
		c = <-rc
	}
	if err = errors.Join(c.err, err); err != nil {
		return err
	}
	own := c.p[strings.LastIndexByte(c.p, '/')+1:]
	for {
		if !slices.Contains(kids, own) {
			return fmt.Errorf("bench: raw lock: %s is not in the listing", own)
		}
		slices.Sort(kids) // one prefix, so the 10-digit sequence orders them
		i := slices.Index(kids, own)
		if i == 0 {
			l.node = c.p
			return nil
		}
		_, _, w, err := l.conn.GetW(l.path + "/" + kids[i-1])
		switch {
		case err == zk.ErrNoNode:
			if kids, _, err = l.conn.Children(l.path); err != nil {
				return err
			}
			continue
		case err != nil:
			return err
		}
		select {
		case ev := <-w:
			if ev.Type != zk.EventNodeDeleted {
				return fmt.Errorf("bench: raw lock: unexpected %s on %s", ev.Type, ev.Path)
			}
			l.node = c.p
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (l *rawLocker) Unlock(context.Context) error {
	if l.node == "" {
		return errors.New("bench: unlock without lock")
	}
	err := l.conn.Delete(l.node, -1)
	l.node = ""
	return err
}

func (l *rawLocker) Close() { l.conn.Close() }
