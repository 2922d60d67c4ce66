package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/zktest"
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

	k, err := Contended(ctx, RawLock, env, "/rawlock/contended", Load{Sessions: 8, Duration: 2 * time.Second})
	require.NoError(t, err)
	assert.Zero(t, k.Violations, "two contenders held at once")
	assert.Greater(t, k.Acquisitions, 100)
	// The workload's critical section is two log writes, which rarely
	// overlap even when exclusion fails; the exclusion check's hold shows it.
	x, err := Contended(ctx, RawLock, env, "/rawlock/exclusion", Load{Sessions: 8, Duration: time.Second, Hold: 500 * time.Microsecond})
	require.NoError(t, err)
	assert.Zero(t, x.Violations, "two contenders held at once")
	assert.Greater(t, x.Acquisitions, 100)

	u, err := Uncontended(ctx, RawLock, env, "/rawlock/uncontended", 10, 200)
	require.NoError(t, err)

	if c.Backend() == zktest.BackendServers {
		t.Log("ZK_SERVERS: other clients may talk to the server; request counts not checked")
		return
	}
	// The server also counts the sessions' pings (each pings every third of
	// its timeout) and the meter's own mntr commands: a few dozen packets,
	// however few acquisitions a loaded machine made (271 once, under two
	// integration runs at once). Even at the fewest acquisitions allowed,
	// that slack tells four requests from five.
	slack := 0.05 + 32/float64(k.Acquisitions)
	assert.InDelta(t, 4.0, k.ReqPerAcq, slack, "requests per contended acquisition (%d acquisitions)", k.Acquisitions)
	assert.InDelta(t, 3.0, u.ReqPerCycle, 0.05, "requests per uncontended cycle")
}
