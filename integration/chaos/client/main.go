// Command client is one contender of the chaos suite: it takes a zkrecipes
// Mutex again and again, writes to the fencing store under each lease's
// token, and appends every event (ACQUIRED, DONE, STOP, RELEASED, WRITE,
// STATE, ERROR) to the shared log with a CLOCK_MONOTONIC stamp. It keeps
// its current session id and password in -session-file, so that the test
// can expire the session from the server side.
//
// On SIGTERM it releases what it holds, closes the Session, checks that no
// goroutine is left, prints a JSON summary line on stdout and exits 0. It
// dials 127.0.0.0/8 only.
package main

import (
	"context"
	"errors"
	"flag"
	"math"
	"math/rand/v2"
	"time"

	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/chaos"
	"github.com/zkrecipes/zkrecipes/integration/internal/fleet"
)

func main() {
	common := fleet.RegisterFlags(flag.CommandLine)
	var (
		path     = flag.String("path", "/chaos/lock", "lock path")
		store    = flag.String("store", "", "fencing store host:port")
		sessFile = flag.String("session-file", "", "where to keep the current session id and password")
		writes   = flag.Int("writes", 3, "writes per ordinary lease")
		hold     = flag.Duration("hold", 20*time.Millisecond, "pause after each write")
		longP    = flag.Float64("long", 0.25, "share of leases held for -long-hold instead of -writes writes")
		longHold = flag.Duration("long-hold", time.Second, "how long a long lease is held")
		leaseT   = flag.Duration("lease-time", 0, "lock with WithLeaseTime(this); a long lease then plays a holder that never looks at Done and writes on until fenced (0: no lease time)")
	)
	flag.Parse()
	fleet.Require(flag.CommandLine, "servers", "id", "log", "store", "session-file")
	fleet.RequireLoopback("the server", common.ServerList()...)
	fleet.RequireLoopback("the store", *store)
	ctx, proc := fleet.Start(common)
	c := &client{id: common.ID, log: proc.Log, writes: *writes, hold: *hold, longP: *longP, longHold: *longHold, sessFile: *sessFile, leaseTime: *leaseT,
		fence: fleet.Fence{Log: proc.Log, HTTP: proc.HTTP, Addr: *store, Actor: common.ID}}
	sum, err := c.run(ctx, common.ServerList(), *path, common.SessionTimeout)
	if err != nil {
		fleet.Fail(err)
	}
	sum.Leaked = proc.Leftover()
	proc.Finish(sum)
}

type client struct {
	id       string
	log      *chaos.Log
	fence    fleet.Fence
	writes   int
	hold     time.Duration
	longP    float64
	longHold time.Duration
	sessFile string
	// leaseTime, when set, is the lock's WithLeaseTime, and long leases
	// ignore Done (a paused holder): only the fence stops their writes.
	leaseTime time.Duration
}

func (c *client) run(ctx context.Context, servers []string, path string, timeout time.Duration) (chaos.Summary, error) {
	sum := chaos.Summary{ID: c.id}
	s, closeSession, err := fleet.Connect(ctx, servers, timeout, c.log, c.id, c.sessFile)
	if err != nil {
		return sum, err
	}
	defer closeSession()

	opts := []zr.LockOption{zr.WithNodeData([]byte(c.id))}
	if c.leaseTime > 0 {
		opts = append(opts, zr.WithLeaseTime(c.leaseTime))
	}
	m := zr.NewMutex(s, path, opts...)
	for ctx.Err() == nil {
		l, err := m.Acquire(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			sum.Errors++
			c.log.Add(chaos.Failed, c.id, err)
			if fleet.Sleep(ctx, 100*time.Millisecond) != nil {
				break
			}
			continue
		}
		sum.Acquisitions++
		if c.holdLease(ctx, l) {
			sum.Losses++
		}
	}
	return sum, nil
}

// holdLease acts as the holder of l until its writes are done (or, for a
// long lease, its time is up), the lease is lost, the store refuses the
// token, or ctx ends; then releases it. It reports whether the lease was
// lost.
func (c *client) holdLease(ctx context.Context, l *zr.Lease) bool {
	writes, until := c.writes, time.Time{}
	blind := false // writes on after Done closes, until fenced
	if rand.Float64() < c.longP {
		writes, until = math.MaxInt, time.Now().Add(c.longHold)
		blind = c.leaseTime > 0
	}
	done := l.Done()
	if blind {
		done = nil
	}
	h := fleet.Hold(c.log, c.id, l)
	reason := "release"
	for i := 0; i < writes && reason == "release" && (until.IsZero() || time.Now().Before(until)); i++ {
		if (l.Err() != nil && !blind) || ctx.Err() != nil {
			reason = "lost"
			if ctx.Err() != nil && l.Err() == nil {
				reason = "shutdown"
			}
			break
		}
		switch res := c.fence.Write(h.Token()); res {
		case "refused":
			reason = "fenced"
		case "accepted", "error":
		}
		select {
		case <-done:
		case <-ctx.Done():
		case <-time.After(c.hold):
		}
	}
	if reason == "release" && l.Err() != nil {
		reason = "lost"
	}
	return errors.Is(h.Release(ctx, reason), zr.ErrLockLost)
}
