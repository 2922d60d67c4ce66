package zkrecipes

import (
	"net"
	"sync"
	"time"
)

// LockOption configures a lock recipe (Mutex, RWMutex, SemaphoreMutex,
// and Semaphore, which takes every LockOption). WithName is one too.
type LockOption interface {
	SemaphoreOption
	applyLock(*lockConfig)
}

// lockOpt is a LockOption that only the locks take.
type lockOpt func(*lockConfig)

func (o lockOpt) applyLock(c *lockConfig) { o(c) }

// applySemaphore applies a lock option to the semaphore's nodes and mutex.
func (o lockOpt) applySemaphore(c *semConfig) { o(&c.lock) }

type lockConfig struct {
	nodeData []byte
	custom   bool
	fast     bool
	err      error

	leaseTime time.Duration // WithLeaseTime (leasetime.go); 0: none
	revocable bool          // WithRevocable (revoke.go)
	name      string        // WithName (observe.go)
}

func buildLockConfig(opts []LockOption) (lockConfig, error) {
	c := lockConfig{fast: true}
	for _, o := range opts {
		if o == nil {
			return c, invalidArg("nil LockOption")
		}
		o.applyLock(&c)
	}
	if c.err == nil {
		c.err = c.checkRevocable()
	}
	return c, c.err
}

func (c lockConfig) data() []byte {
	switch {
	case c.custom:
		return c.nodeData
	case c.revocable:
		return []byte{} // as Curator's revocable locks write
	}
	return []byte(localAddress())
}

// WithNodeData sets the data stored in each contender's node, which
// Participants reports and operators see (for a Semaphore: each lease node
// and each node of its mutex). Data that makes a node's create
// request larger than the Session's limit (WithMaxRequestSize: a little
// under 1 MiB by default) makes every method of the recipe fail with
// ErrDataTooLarge. Nil or empty data is stored as 0 bytes. Default: this
// host's address as text, as Curator writes.
func WithNodeData(data []byte) LockOption {
	return lockOpt(func(c *lockConfig) {
		c.nodeData = append([]byte(nil), data...)
		c.custom = true
	})
}

// WithFastHandoff sets whether a waiter may take the lock as soon as the
// node it watches is deleted, without listing the children again, when
// every node on the path was sequential at its first listing (true of
// Curator's, kazoo's, go-zookeeper's and this package's locks): nodes
// created later always sort after it, so the nodes ahead can only go away.
// It saves one round trip per handoff and keeps the cost of a handoff
// independent of the queue length. It is not safe if some client creates
// non-sequential nodes with lock-like names on the path, or once the
// parent's sequence counter wraps past 2^31 (both are detected at the
// first listing, which then falls back to listing every time). Default
// true.
func WithFastHandoff(enabled bool) LockOption {
	return lockOpt(func(c *lockConfig) { c.fast = enabled })
}

var (
	addrOnce sync.Once
	addr     string
)

// localAddress returns the first non-loopback IPv4 address of this host,
// read from its interfaces (no network traffic), or 127.0.0.1.
func localAddress() string {
	addrOnce.Do(func() {
		addr = "127.0.0.1"
		ifs, err := net.InterfaceAddrs()
		if err != nil {
			return
		}
		for _, a := range ifs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
				addr = n.IP.String()
				return
			}
		}
	})
	return addr
}
