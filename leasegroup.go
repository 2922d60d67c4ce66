package zkrecipes

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// group is the state of a composite lease: several member leases that are
// held, lost and released together.
type group struct {
	members []*Lease
	sig     *signal
	stop    chan struct{}
	mu      sync.Mutex
	ended   bool // under mu: the one that sets it fires sig
}

// newGroup watches every member: the first one to end ends the group, and
// the others are then released, so that no member outlives the group.
// Each watcher goroutine ends with its member or with the group; every
// member ends when its Session closes.
func newGroup(members []*Lease) *group {
	g := &group{members: members, sig: newSignal(), stop: make(chan struct{})}
	for _, m := range members {
		go func() {
			select {
			case <-m.Done():
				g.memberEnded(m)
			case <-g.stop:
			}
		}()
	}
	return g
}

// memberEnded ends the group after member m ended. The other members are
// released before Done closes, so that once a holder learns of the loss
// the locks are free for others: on a connected session the delete is
// waited for (at most cleanupTimeout); on a disconnected one it goes to
// the background at once.
func (g *group) memberEnded(m *Lease) {
	g.mu.Lock()
	if g.ended {
		g.mu.Unlock()
		return
	}
	g.ended = true
	close(g.stop)
	g.mu.Unlock()
	err := m.Err()
	if err == nil || errors.Is(err, ErrReleased) {
		err = lost(fmt.Errorf("%w: member %s released on its own", ErrReleased, m.Path()))
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	down, cancelDown := context.WithCancel(context.Background())
	cancelDown()
	for i := len(g.members) - 1; i >= 0; i-- {
		l := g.members[i]
		c := ctx
		if !l.top().s.State().connected() {
			c = down // a release on a cancelled ctx deletes in the background
		}
		_ = l.Release(c)
	}
	g.sig.fire(err)
}

func (g *group) release(ctx context.Context) error {
	g.mu.Lock()
	if g.ended {
		g.mu.Unlock()
		<-g.sig.done // memberEnded fires it shortly
		return g.sig.err
	}
	g.ended = true
	close(g.stop)
	g.mu.Unlock()
	g.sig.fire(ErrReleased)
	return releaseAll(ctx, g.members)
}

// newest is the member hold with the highest token: the node created last.
func (g *group) newest() *hold {
	top := g.members[0].top()
	for _, m := range g.members[1:] {
		if h := m.top(); h.token > top.token {
			top = h
		}
	}
	return top
}

// releaseAll releases leases in reverse order and joins the errors of
// those that were still held (a lease already released reports nothing).
func releaseAll(ctx context.Context, leases []*Lease) error {
	var errs []error
	for i := len(leases) - 1; i >= 0; i-- {
		if err := leases[i].Release(ctx); err != nil && !errors.Is(err, ErrReleased) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
