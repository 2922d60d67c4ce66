package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/peers"
	"github.com/zkrecipes/zkrecipes/zktest"
)

func TestCuratorLeaseAnswers_AreReadOrRefused(t *testing.T) {
	sid, err := parseCuratorSession("-7205759403792793599\n")
	require.NoError(t, err)
	assert.Equal(t, int64(-7205759403792793599), sid, "a Java long: signed")
	_, err = parseCuratorSession("READY")
	assert.ErrorContains(t, err, "bench: curator lease holder: session")

	live, threads, err := parseCuratorCost(`{"heap":6901304,"live":3244800,"threads":17}`)
	require.NoError(t, err)
	assert.InDelta(t, 3244800, live, 0, "the live objects' bytes, not the used heap")
	assert.Equal(t, 17, threads)
	_, _, err = parseCuratorCost(`{"heap":1,"live":1}`)
	assert.ErrorContains(t, err, "cost", "a cost without its threads")
	_, _, err = parseCuratorCost(`{"heap":1,"threads":1}`)
	assert.ErrorContains(t, err, "cost", "a cost without its live bytes")
	_, _, err = parseCuratorCost("OK")
	assert.Error(t, err)

	nodes, err := parseCuratorNodes(`["/d/e0/_c_1-lock-0000000000","/d/e1/_c_2-lock-0000000000"]`, 2)
	require.NoError(t, err)
	assert.Equal(t, []string{"/d/e0/_c_1-lock-0000000000", "/d/e1/_c_2-lock-0000000000"}, nodes)
	_, err = parseCuratorNodes(`["/d/e0/x"]`, 2)
	assert.ErrorContains(t, err, "1 nodes for 2 leases")
	_, err = parseCuratorNodes(`["/d/e0/x",null]`, 2)
	assert.ErrorContains(t, err, `lease 1's node is ""`, "a lease whose node the mutex did not tell")

	ended, err := parseCuratorEnded("[]", 3)
	require.NoError(t, err)
	assert.Equal(t, []bool{false, false, false}, ended)
	ended, err = parseCuratorEnded("[0,2]", 3)
	require.NoError(t, err)
	assert.Equal(t, []bool{true, false, true}, ended)
	_, err = parseCuratorEnded("[3]", 3)
	assert.ErrorContains(t, err, "lease 3 ended, of 3")
}

// Each holder of the lease curve holds 50 leases on a server of the
// test's own, keeps them through a connection drop and a restart of the
// server, and leaves nothing behind; Curator's where its jars are.
func TestHeldLeases_EveryHolderKeepsItsLeasesThroughADropAndARestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := zktest.Start(t)
	if c.Backend() == zktest.BackendServers {
		t.Skip("restarts the server, and a shared server's other clients move its watch count")
	}
	env := Env{Servers: c.Servers()}
	var err error
	env.Observer, err = ConnectRaw(ctx, env.Servers)
	require.NoError(t, err)
	t.Cleanup(env.Observer.Close)

	kinds := []string{LeasesZkrecipes, LeasesGozk, LeasesCurator}
	if err := peers.Available(peers.Curator); err != nil {
		t.Logf("no Curator: %v", err)
		kinds = kinds[:2]
	}
	for _, kind := range kinds {
		dir := "/curves/lease/" + kind
		r, err := HeldLeases(ctx, env, func() error { return c.Restart(0) }, kind, dir, 50)
		require.NoError(t, err, kind)
		t.Logf("%s: %+v, restart %+v", kind, r, *r.Restart)
		assert.Equal(t, 50, r.Leases, kind)
		assert.Positive(t, r.Acquire, kind)
		assert.Positive(t, r.HeapPerLease, kind)
		require.NotNil(t, r.Restart, kind)
		for what, rec := range map[string]Recovery{"drop": r.Drop, "restart": *r.Restart} {
			assert.True(t, rec.SameSession, "%s: %s", kind, what)
			assert.Positive(t, rec.Whole, "%s: %s: whole again", kind, what)
			assert.Zero(t, rec.Lost, "%s: %s", kind, what)
		}
		if kind == LeasesCurator {
			assert.Zero(t, r.Watches, "an InterProcessMutex holding its lock watches nothing")
		}
		ok, _, err := env.Observer.Exists(dir)
		require.NoError(t, err)
		assert.False(t, ok, "%s: the leases' tree is gone", kind)
	}
}
