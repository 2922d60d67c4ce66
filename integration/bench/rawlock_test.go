package bench

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/zktest"
)

// The raw lock is the floor the locks are compared with, so what it claims
// to be is checked on a real server: it excludes in the contended workload
// (no contender gives up there), and it makes the fewest requests a
// queueing lock can, four per contended acquisition and three per
// uncontended cycle.
func TestRawLock_ExcludesAndMakesTheFewestRequestsALockCan(t *testing.T) {
	c := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := Env{Servers: c.Servers()}
	m, err := NewMeter(ctx, env.Servers[0])
	require.NoError(t, err)
	env.Meter = m

	k, err := Contended(ctx, RawLock, env, "/rawlock/contended", 8, 2*time.Second)
	require.NoError(t, err)
	assert.Zero(t, k.Violations, "two contenders held at once")
	assert.Greater(t, k.Acquisitions, 100)
	// The workload's critical section is two log writes, which rarely
	// overlap even when exclusion fails; a longer one shows it.
	assert.Equal(t, 1, maxInside(ctx, t, env, "/rawlock/exclusion", 8, 200), "contenders inside at once")

	u, err := Uncontended(ctx, RawLock, env, "/rawlock/uncontended", 10, 200)
	require.NoError(t, err)

	if c.Backend() == zktest.BackendServers {
		t.Log("ZK_SERVERS: other clients may talk to the server; request counts not checked")
		return
	}
	// The server also counts the sessions' pings and the meter's own mntr
	// commands: a few packets over hundreds of acquisitions.
	assert.InDelta(t, 4.0, k.ReqPerAcq, 0.05, "requests per contended acquisition")
	assert.InDelta(t, 3.0, u.ReqPerCycle, 0.05, "requests per uncontended cycle")
}

// maxInside has n contenders of the raw lock on path take it rounds times
// in all, each staying inside for a while, and returns the most that were
// inside at once.
func maxInside(ctx context.Context, t *testing.T, env Env, path string, n, rounds int) int {
	t.Helper()
	ls, err := openMany(ctx, RawLock, env, path, n)
	require.NoError(t, err)
	defer closeAll(ls)
	var inside, most, left atomic.Int32
	left.Store(int32(rounds))
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				if errs[i] = l.Lock(ctx); errs[i] != nil {
					return
				}
				now := inside.Add(1)
				for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
				}
				time.Sleep(500 * time.Microsecond) // hold it a while
				inside.Add(-1)
				if errs[i] = l.Unlock(ctx); errs[i] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	return int(most.Load())
}
