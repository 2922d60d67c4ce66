package bench

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/zktest"
)

func TestSessionMemory_RefusesAnUnknownKindOrNoSession(t *testing.T) {
	ctx := context.Background()
	_, err := SessionMemory(ctx, Env{Servers: []string{"127.0.0.1:1"}}, "curator", 1)
	assert.ErrorContains(t, err, `no session kind "curator"`)
	_, err = SessionMemory(ctx, Env{Servers: []string{"127.0.0.1:1"}}, MemoryGozk, 0)
	assert.ErrorContains(t, err, "0 sessions")
	_, err = MarkedChain(ctx, Env{Servers: []string{"127.0.0.1:1"}}, "/chain", 0)
	assert.ErrorContains(t, err, "0 links")
}

// The drain curve's floor and the memory curve on a real server: the
// marked chain hands over with one request per handoff (the release's
// multi), and each open session keeps heap and goroutines of its own.
func TestCurves_MarkedChainAndSessionMemoryOnARealServer(t *testing.T) {
	c := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := Env{Servers: c.Servers()}
	m, err := NewMeter(ctx, env.Servers[0])
	require.NoError(t, err)
	env.Meter = m

	d, err := MarkedChain(ctx, env, "/curves/chain", 20)
	require.NoError(t, err)
	assert.Equal(t, 20, d.Waiters)
	assert.Positive(t, d.PerHandoff)
	assert.Equal(t, d.PerHandoff*20, d.Total)
	if c.Backend() != zktest.BackendServers {
		// Pings and the meter's own reads are a few packets more.
		assert.InDelta(t, 1.0, d.ReqPerHandoff, 0.5, "requests per handoff: the release's multi")
	}

	for _, kind := range []string{MemoryZkrecipes, MemoryGozk} {
		r, err := SessionMemory(ctx, env, kind, 3)
		require.NoError(t, err, kind)
		assert.Equal(t, 3, r.Sessions, kind)
		assert.Positive(t, r.HeapPerSession, kind)
		assert.GreaterOrEqual(t, r.GoroutinesPerSession, 2.0, "%s: a connection reads and writes on goroutines of its own", kind)
	}
}

// The marked chain is the drain's floor only if it makes exactly what a
// drain of zkrecipes' Mutex makes: the holder, which did not wait,
// deletes plainly and the first waiter watches only that deletion; every
// later link releases in one multi. So at any size the chain's requests
// and reply bytes per handoff are the Mutex drain's, measured beside it.
func TestMarkedChain_MakesTheRequestsAndBytesOfAMutexDrain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := ownEnv(t, ctx, "a shared server's other clients add to its counters") // exact counts need a server of our own
	impl, ok := ImplByName("zkrecipes")
	require.True(t, ok)

	const n = 10
	chain, err := MarkedChain(ctx, env, "/curves/chain", n)
	require.NoError(t, err)
	drain, err := Drain(ctx, impl, env, "/curves/drain", n)
	require.NoError(t, err)
	t.Logf("per handoff: drain %.2f requests, %.1f bytes; chain %.2f requests, %.1f bytes", drain.ReqPerHandoff, drain.BytesPerHandoff, chain.ReqPerHandoff, chain.BytesPerHandoff)
	// The replies: the holder's delete (16 bytes) and n marked releases
	// (111 each). The server may count the last reply's bytes only after
	// the client has it, so the last release's may be missing.
	want := []int{16 + 111*n, 16 + 111*(n-1)}
	assert.Contains(t, want, int(math.Round(drain.BytesPerHandoff*n)), "the Mutex drain's reply bytes")
	assert.Contains(t, want, int(math.Round(chain.BytesPerHandoff*n)), "the marked chain's reply bytes")
	assert.InDelta(t, drain.ReqPerHandoff, chain.ReqPerHandoff, 0.15, "requests per handoff, chain against drain")
}

// ownEnv starts a server of the test's own (skipping, with why, where
// the only one is a shared ZK_SERVERS) and returns its Env.
func ownEnv(t *testing.T, ctx context.Context, why string) Env {
	t.Helper()
	c := zktest.Start(t)
	if c.Backend() == zktest.BackendServers {
		t.Skip(why)
	}
	env := Env{Servers: c.Servers()}
	var err error
	env.Observer, err = ConnectRaw(ctx, env.Servers)
	require.NoError(t, err)
	t.Cleanup(env.Observer.Close)
	env.Meter, err = NewMeter(ctx, env.Servers[0])
	require.NoError(t, err)
	return env
}
