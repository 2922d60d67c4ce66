package bench

import (
	"context"
	"fmt"

	"github.com/go-zookeeper/zk"
	zr "github.com/zkrecipes/zkrecipes"
)

// The lease curve's holders: zkrecipes' Mutex on one Session, and
// go-zookeeper's zk.Lock on one connection.

// zkrHolder holds zkrecipes leases on one Session.
type zkrHolder struct {
	s      *zr.Session
	dir    string
	leases []*zr.Lease
}

// openZkrHolder connects a Session to addr only (ensemble tracking off:
// the proxy at addr is the way in), under LoseOnLost, and acquires and
// releases one lease, so that what the Session sets up once is in the
// baseline.
func openZkrHolder(ctx context.Context, addr, dir string) (*zkrHolder, error) {
	s, err := zr.Connect(ctx, []string{addr}, zr.WithSessionTimeout(LeaseSessionTimeout), zr.WithDialer(LoopbackDialer),
		zr.WithLossPolicy(zr.LoseOnLost), zr.WithEnsembleTracking(false))
	if err != nil {
		return nil, err
	}
	l, err := zr.NewMutex(s, dir+"/warm").Acquire(ctx)
	if err == nil {
		err = l.Release(ctx)
	}
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	return &zkrHolder{s: s, dir: dir}, nil
}

func (z *zkrHolder) hold(ctx context.Context, n int) error {
	z.leases = make([]*zr.Lease, n)
	return forEach(ctx, n, 50, func(i int) error {
		l, err := zr.NewMutex(z.s, leasePath(z.dir, i)).Acquire(ctx)
		z.leases[i] = l
		return err
	})
}

func (z *zkrHolder) nodes(context.Context) ([]string, error) {
	ps := make([]string, len(z.leases))
	for i, l := range z.leases {
		ps[i] = l.Path() // the Session has no namespace: the absolute path
	}
	return ps, nil
}

func (z *zkrHolder) ended(i int) bool { return z.leases[i].Err() != nil }

// watchesPerLease: a hold past 10 ms watches its own node (holdwatch.go).
func (z *zkrHolder) watchesPerLease() int { return 1 }

func (z *zkrHolder) sessionID() int64 { return z.s.SessionID() }

func (z *zkrHolder) armBack(ctx context.Context) func() (int64, error) {
	ch, err := z.s.Subscribe(ctx)
	return func() (int64, error) {
		if err != nil {
			return 0, err
		}
		for c := range ch {
			switch c.State {
			case zr.StateConnected, zr.StateReconnected:
				return c.SessionID, nil
			case zr.StateClosed:
				return 0, zr.ErrClosed
			}
		}
		return 0, ctx.Err()
	}
}

func (z *zkrHolder) close() { _ = z.s.Close() }

// gozkHolder holds go-zookeeper locks on one connection.
type gozkHolder struct {
	conn  *zk.Conn
	dir   string
	back  chan struct{} // a token at each StateHasSession, if none is waiting
	locks []*zk.Lock
}

// openGozkHolder connects to addr, and takes and releases one lock, so
// that what the connection sets up once is in the baseline.
func openGozkHolder(ctx context.Context, addr, dir string) (*gozkHolder, error) {
	g := &gozkHolder{dir: dir, back: make(chan struct{}, 1)}
	conn, _, err := zk.Connect([]string{addr}, LeaseSessionTimeout, zk.WithDialer(LoopbackDialer),
		zk.WithLogger(quiet{}), zk.WithLogInfo(false), zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type == zk.EventSession && ev.State == zk.StateHasSession {
				select {
				case g.back <- struct{}{}:
				default:
				}
			}
		}))
	if err != nil {
		return nil, err
	}
	g.conn = conn
	select {
	case <-g.back:
	case <-ctx.Done():
		conn.Close()
		return nil, fmt.Errorf("bench: connect to %s: %w", addr, ctx.Err())
	}
	l := zk.NewLock(conn, dir+"/warm", zk.WorldACL(zk.PermAll))
	err = l.Lock()
	if err == nil {
		err = l.Unlock()
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	return g, nil
}

func (g *gozkHolder) hold(ctx context.Context, n int) error {
	g.locks = make([]*zk.Lock, n)
	acl := zk.WorldACL(zk.PermAll)
	return forEach(ctx, n, 50, func(i int) error {
		l := zk.NewLock(g.conn, leasePath(g.dir, i), acl)
		if err := l.Lock(); err != nil {
			return err
		}
		g.locks[i] = l
		return nil
	})
}

// nodes lists each lock's path: zk.Lock does not tell its node.
func (g *gozkHolder) nodes(ctx context.Context) ([]string, error) {
	ps := make([]string, len(g.locks))
	err := forEach(ctx, len(g.locks), 50, func(i int) error {
		p := leasePath(g.dir, i)
		kids, _, err := g.conn.Children(p)
		if err != nil {
			return err
		}
		if len(kids) != 1 {
			return fmt.Errorf("bench: %s holds %d nodes, not its lock's alone", p, len(kids))
		}
		ps[i] = p + "/" + kids[0]
		return nil
	})
	return ps, err
}

// ended is false: zk.Lock tells its holder of no loss.
func (g *gozkHolder) ended(int) bool { return false }

func (g *gozkHolder) watchesPerLease() int { return 0 }

func (g *gozkHolder) sessionID() int64 { return g.conn.SessionID() }

func (g *gozkHolder) armBack(ctx context.Context) func() (int64, error) {
	select {
	case <-g.back: // a token from before the fault
	default:
	}
	return func() (int64, error) {
		select {
		case <-g.back:
			return g.conn.SessionID(), nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

func (g *gozkHolder) close() { g.conn.Close() }
