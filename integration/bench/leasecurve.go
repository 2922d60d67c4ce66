package bench

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// The lease curve (issue 45): many leases held on one session, what they
// cost this process and the server, and how long the session takes to be
// whole again after its connection drops and after the server restarts.

// LeaseSessionTimeout is the session timeout of the lease curve's
// sessions. A standalone server that restarts keeps a session whose
// client is back within its timeout; 40 s outlasts the server's restart
// (a JVM starting and loading its data: seconds) and is within the test
// server's maximum (60 s).
const LeaseSessionTimeout = 40 * time.Second

// LeaseRecoveryWait bounds the wait, from a fault, for the session to be
// connected again and every watch re-set.
const LeaseRecoveryWait = 2 * time.Minute

// The holders HeldLeases measures.
const (
	// LeasesZkrecipes is zkrecipes' Mutex: n Mutexes on n paths, each
	// acquired once, on one Session under LoseOnLost (under the default
	// LoseOnSuspended every lease ends at the drop, by design).
	LeasesZkrecipes = "zkrecipes"
	// LeasesGozk is go-zookeeper's zk.Lock: n locks on n paths on one
	// *zk.Conn. It sets no watch while holding, and tells its holder of
	// no loss.
	LeasesGozk = "gozk"
	// LeasesCurator is Apache Curator 5.4's InterProcessMutex: n mutexes
	// on n paths on one CuratorFramework (one session, LeaseSessionTimeout)
	// in a JVM of its own (peers/java/CuratorLeaseBench.java, serial GC,
	// CuratorLeaseHeap), under Curator's default
	// ConnectionStateErrorPolicy: a suspended or lost connection releases
	// no lock; a LOST state (the session presumed expired) is the only
	// news of a lease that may have ended. It sets no watch while holding.
	LeasesCurator = "curator"
)

// HeldLeasesResult is one run of the lease curve: Leases held on one
// session, and that session's recovery from a connection drop and from a
// server restart.
type HeldLeasesResult struct {
	Leases int `json:"leases"`
	// Acquire is the time to acquire every lease, 50 goroutines acquiring
	// on distinct paths (each path's parent created on the way).
	Acquire time.Duration `json:"acquire_ns"`
	// HeapPerLease and GoroutinesPerLease are the live heap (after a GC)
	// and the goroutines the held leases add to this process, against the
	// same session holding nothing, once every hold has set its watch.
	// For LeasesCurator they are the JVM's: the bytes of its live objects
	// (its class histogram's total, after a full GC; its used heap after
	// System.gc() was off by a megabyte, as much as 1,000 leases hold) and
	// its live threads (the 50 acquiring threads ended), not goroutines;
	// this process is not measured.
	HeapPerLease       float64 `json:"heap_bytes_per_lease"`
	GoroutinesPerLease float64 `json:"goroutines_per_lease"`
	// Watches is the growth of the server's zk_watch_count while held.
	Watches int64 `json:"watches"`
	// Drop is the recovery from the proxy's reset of every connection;
	// Restart from the server's restart (absent when it was not run).
	Drop    Recovery  `json:"drop"`
	Restart *Recovery `json:"restart,omitempty"`
}

// Recovery is how a session holding leases came through a fault.
type Recovery struct {
	// Server is, for a restart, the time from the server's kill until it
	// served again.
	Server time.Duration `json:"server_ns,omitempty"`
	// Back is the time from the fault until the client was connected
	// again, under the same ZooKeeper session if SameSession.
	Back        time.Duration `json:"back_ns"`
	SameSession bool          `json:"same_session"`
	// Whole is the time from the fault until the client was back under
	// the same session and the server's zk_watch_count back to what it
	// was while held (every watch re-set); 0 if that did not happen
	// within LeaseRecoveryWait. Watches is the count then.
	Whole   time.Duration `json:"whole_ns"`
	Watches int64         `json:"watches"`
	// Lost counts the leases lost: the holder was told so, or the node is
	// gone or owned by another session (read from a fresh connection,
	// after Whole: not timed). Curator tells its holder of a LOST state
	// only (LeasesCurator): a lease it keeps is its lock node still there
	// and owned by the same session.
	Lost int `json:"lost"`
	// BytesReceived is, for a drop, the bytes the server read from its
	// clients from the fault until Whole (the SetWatches packets, mostly);
	// a restart starts the server's counters again.
	BytesReceived int64 `json:"bytes_received,omitempty"`
}

// leaseHolder is a session that holds leases on the paths leasePath(dir, i).
type leaseHolder interface {
	// hold acquires n leases.
	hold(ctx context.Context, n int) error
	// nodes returns the path of each lease's node, in lease order.
	nodes(ctx context.Context) ([]string, error)
	// ended reports whether the holder was told that lease i ended.
	ended(i int) bool
	// watchesPerLease is the server watches a held lease keeps.
	watchesPerLease() int
	sessionID() int64
	// armBack must be called before a fault: the function it returns
	// waits until the client is connected again after the fault, and
	// returns its session id.
	armBack(ctx context.Context) func() (int64, error)
	close()
}

func leasePath(dir string, i int) string { return fmt.Sprintf("%s/e%d", dir, i) }

// HeldLeases measures one run of the lease curve for kind (LeasesZkrecipes,
// LeasesGozk or LeasesCurator): one session, connected to env's first server through a
// loopback proxy, acquires n leases on n distinct paths under dir; the
// leases are held while the proxy resets every connection, then while
// restart (nil: not run) restarts the server. Every node under dir is
// deleted before it returns. Nothing else in the process should allocate
// meanwhile, nor any other client set a watch.
func HeldLeases(ctx context.Context, env Env, restart func() error, kind, dir string, n int) (res HeldLeasesResult, err error) {
	if n < 1 {
		return res, fmt.Errorf("bench: held leases: %d leases", n)
	}
	proxy, err := zktest.ListenProxy(env.Servers[0])
	if err != nil {
		return res, err
	}
	defer proxy.Close()
	h, err := openHolder(ctx, kind, proxy.Addr(), dir)
	if err != nil {
		return res, err
	}
	defer func() {
		h.close()
		err = errors.Join(err, removeLeaseTree(ctx, env, dir, n))
	}()
	if res, err = holdMeasured(ctx, env, h, n); err != nil {
		return res, err
	}
	nodes, err := h.nodes(ctx)
	if err != nil {
		return res, err
	}
	watches, err := env.watches(ctx)
	if err != nil {
		return res, err
	}
	sid := h.sessionID()
	res.Drop, err = recoverFrom(ctx, env, h, sid, nodes, watches, true, func() error { proxy.ResetAll(); return nil })
	if err != nil || restart == nil {
		return res, err
	}
	r, err := recoverFrom(ctx, env, h, sid, nodes, watches, false, restart)
	res.Restart = &r
	return res, err
}

func openHolder(ctx context.Context, kind, addr, dir string) (leaseHolder, error) {
	switch kind {
	case LeasesZkrecipes:
		return openZkrHolder(ctx, addr, dir)
	case LeasesGozk:
		return openGozkHolder(ctx, addr, dir)
	case LeasesCurator:
		return openCuratorHolder(ctx, addr, dir)
	}
	return nil, fmt.Errorf("bench: no lease holder %q (want %q, %q or %q)", kind, LeasesZkrecipes, LeasesGozk, LeasesCurator)
}

// holdMeasured acquires n leases on h and measures the acquisition, and
// the heap, goroutines and server watches they add once every hold has set
// its watches.
func holdMeasured(ctx context.Context, env Env, h leaseHolder, n int) (HeldLeasesResult, error) {
	res := HeldLeasesResult{Leases: n}
	w0, err := env.watches(ctx)
	if err != nil {
		return res, err
	}
	steady()
	heap0, gor0, err := holderCost(ctx, h, 0)
	if err != nil {
		return res, err
	}
	start := time.Now()
	if err := h.hold(ctx, n); err != nil {
		return res, fmt.Errorf("acquiring %d leases: %w", n, err)
	}
	res.Acquire = time.Since(start)
	want := w0 + int64(n*h.watchesPerLease())
	wctx, cancel := context.WithTimeout(ctx, LeaseRecoveryWait)
	w1, err := env.awaitWatches(wctx, want)
	cancel()
	if err != nil {
		return res, fmt.Errorf("%d leases held: %d of %d server watches set: %w", n, w1-w0, want-w0, err)
	}
	heap1, gor1, err := holderCost(ctx, h, gor0+n/100)
	if err != nil {
		return res, err
	}
	res.HeapPerLease = (heap1 - heap0) / float64(n)
	res.GoroutinesPerLease = float64(gor1-gor0) / float64(n)
	if w1, err = env.watches(ctx); err != nil {
		return res, err
	}
	res.Watches = w1 - w0
	return res, nil
}

// processHolder is a holder whose leases live in another process.
type processHolder interface {
	leaseHolder
	// cost returns that process's live heap and its threads.
	cost(ctx context.Context) (heap float64, threads int, err error)
	// readEnded reads which leases that process was told ended; ended
	// reports them until the next readEnded.
	readEnded(ctx context.Context) error
}

// holderCost returns the live heap and the goroutines of the process
// holding h's leases: this one once its goroutines are at most atMost
// (0: at once; after 10 s at most), or the holder's own process.
func holderCost(ctx context.Context, h leaseHolder, atMost int) (heap float64, goroutines int, err error) {
	if p, ok := h.(processHolder); ok {
		return p.cost(ctx)
	}
	b, g := settled(atMost)
	return float64(b), g, nil
}

// recoverFrom runs fault on a session holding leases on nodes, under
// session sid with the server holding watches, and measures the
// recovery; drop says the fault keeps the server's counters.
func recoverFrom(ctx context.Context, env Env, h leaseHolder, sid int64, nodes []string, watches int64, drop bool, fault func() error) (Recovery, error) {
	var r Recovery
	before, err := env.counters(ctx)
	if err != nil {
		return r, err
	}
	wctx, cancel := context.WithTimeout(ctx, LeaseRecoveryWait)
	defer cancel()
	back := h.armBack(wctx)
	start := time.Now()
	if err := fault(); err != nil {
		return r, err
	}
	if !drop {
		r.Server = time.Since(start)
	}
	id, err := back()
	if err != nil {
		return r, fmt.Errorf("not connected again within %v: %w", LeaseRecoveryWait, err)
	}
	r.Back, r.SameSession = time.Since(start), id == sid
	if r.SameSession {
		r.Watches, err = env.awaitWatches(wctx, watches)
		if err == nil {
			r.Whole = time.Since(start)
		}
	}
	if drop && r.Whole > 0 {
		after, err := env.counters(ctx)
		if err != nil {
			return r, err
		}
		r.BytesReceived = after.BytesReceived - before.BytesReceived
	}
	r.Lost, err = lostLeases(ctx, env, h, sid, nodes)
	return r, err
}

// lostLeases counts the leases on nodes lost by h, whose session is sid:
// h was told so, or its node, read from a fresh connection, is gone or
// has another ephemeral owner.
func lostLeases(ctx context.Context, env Env, h leaseHolder, sid int64, nodes []string) (int, error) {
	if p, ok := h.(processHolder); ok {
		if err := p.readEnded(ctx); err != nil {
			return 0, err
		}
	}
	obs, err := ConnectRaw(ctx, env.Servers)
	if err != nil {
		return 0, err
	}
	defer obs.Close()
	var lost atomic.Int64
	err = forEach(ctx, len(nodes), 64, func(i int) error {
		ok, st, err := obs.Exists(nodes[i])
		if err != nil {
			return err
		}
		if h.ended(i) || !ok || st.EphemeralOwner != sid {
			lost.Add(1)
		}
		return nil
	})
	return int(lost.Load()), err
}

// removeLeaseTree deletes the lease paths leasePath(dir, i) for i < n,
// dir/warm and dir, from a fresh connection; the leases' session must
// have ended. A path already gone (a container the server removed) is
// no error.
func removeLeaseTree(ctx context.Context, env Env, dir string, n int) error {
	obs, err := ConnectRaw(ctx, env.Servers)
	if err != nil {
		return fmt.Errorf("clean-up: %w", err)
	}
	defer obs.Close()
	del := func(p string) error {
		if err := obs.Delete(p, -1); err != nil && err != zk.ErrNoNode {
			return fmt.Errorf("clean-up: delete %s: %w", p, err)
		}
		return nil
	}
	if err := forEach(ctx, n, 32, func(i int) error { return del(leasePath(dir, i)) }); err != nil {
		return err
	}
	return errors.Join(del(dir+"/warm"), del(dir))
}

// counters returns the servers' counters now, summed (without the CPU
// time: a restarted server is another process than the Meter found).
func (e Env) counters(ctx context.Context) (Counters, error) {
	var sum Counters
	for _, a := range e.Servers {
		c, err := ReadCounters(ctx, a)
		if err != nil {
			return Counters{}, err
		}
		sum.BytesReceived += c.BytesReceived
		sum.Watches += c.Watches
	}
	return sum, nil
}

// watches returns the servers' zk_watch_count, summed.
func (e Env) watches(ctx context.Context) (int64, error) {
	c, err := e.counters(ctx)
	return c.Watches, err
}

// awaitWatches polls the servers' zk_watch_count every 20 ms until it is
// at least want, and returns it; when ctx ends first, it returns the last
// count read and ctx's error. A server that cannot be read (restarting)
// is read again.
func (e Env) awaitWatches(ctx context.Context, want int64) (int64, error) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last int64
	for {
		if w, err := e.watches(ctx); err == nil {
			if last = w; w >= want {
				return w, nil
			}
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-tick.C:
		}
	}
}
