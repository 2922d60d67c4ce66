package recipes_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/internal/zkdns"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// These tests give the Session names, never addresses: a real DNS server
// on 127.0.0.1 (zkdns) answers for them, and the test changes its records
// while the Session runs. The Session asks that server only
// (WithResolver).

func port(t *testing.T, addr string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	return p
}

// A name that does not resolve when Connect is called does not fail it:
// Connect keeps looking the name up, within its ctx, and connects once
// the name resolves.
func TestDNS_ConnectWaitsForANameThatDoesNotResolveYet(t *testing.T) {
	c := server(t)
	dns := zkdns.Start(t)
	const name = "zk-late.zkrecipes.test"
	type result struct {
		s   *zr.Session
		err error
	}
	done := make(chan result, 1)
	addr := net.JoinHostPort(name, port(t, c.Servers()[0]))
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		s, err := zr.Connect(ctx, []string{addr},
			append([]zr.SessionOption{zr.WithResolver(dns.Resolver()), zr.WithSessionTimeout(4 * time.Second)}, wireLayer()...)...)
		done <- result{s, err}
	}()
	var r result
	received := false
	t.Cleanup(func() {
		if !received {
			r = <-done
		}
		if r.s != nil {
			_ = r.s.Close()
		}
	})
	// Two lookups at least (A and AAAA each): Connect tried the name,
	// found nothing, and tried it again.
	require.Eventually(t, func() bool { return dns.Queries(name) >= 4 }, 30*time.Second, 10*time.Millisecond,
		"Connect does not keep looking the name up")
	select {
	case r = <-done:
		received = true
		t.Fatalf("Connect returned before the name resolved: %v", r.err)
	default:
	}

	require.NoError(t, dns.Set(name, "127.0.0.1"))
	select {
	case r = <-done:
		received = true
	case <-time.After(60 * time.Second):
		t.Fatal("Connect did not return once the name resolved")
	}
	require.NoError(t, r.err)
	assert.Equal(t, zr.StateConnected, r.s.State())
	ctx := ctxT(t, 30*time.Second)
	l, err := zr.NewMutex(r.s, testPath(t)).Acquire(ctx)
	require.NoError(t, err, "the Session works")
	require.NoError(t, l.Release(ctx))
}

// A lease is held on a Session that knows its ensemble by one name, as
// a Kubernetes pod's: the member the name points at is killed and its
// address stops answering; the name moves to an address where nothing
// answers yet (127.0.0.2: every listener here is on 127.0.0.1), then to
// the address where another member answers. The Session follows the name
// to the other member under the same ZooKeeper session, and the lease,
// under LoseOnLost, is kept: its node is still there, owned by the
// session.
func TestDNS_SessionFollowsANameMovedToAnotherMemberAndKeepsItsLease(t *testing.T) {
	server(t) // the suite's backend must be available
	// Ticks of 500ms let sessions last 10s (20 ticks), time enough on a
	// busy machine for the move.
	ens := zktest.Start(t, zktest.WithSize(3), zktest.WithTickTime(500*time.Millisecond))
	ctx := ctxT(t, 3*time.Minute)
	leader, err := ens.WaitLeader(ctx)
	require.NoError(t, err)
	// Two followers: killing one leaves the quorum and its leader alone.
	from, to := (leader+1)%3, (leader+2)%3
	pFrom := zktest.NewProxy(t, ens.Servers()[from])
	dns := zkdns.Start(t)
	const name = "zk.zkrecipes.test"
	require.NoError(t, dns.Set(name, "127.0.0.1"))

	cl := connect(t, ens, []string{net.JoinHostPort(name, port(t, pFrom.Addr()))},
		zr.WithResolver(dns.Resolver()), zr.WithLossPolicy(zr.LoseOnLost), zr.WithSessionTimeout(10*time.Second),
		zr.WithEnsembleTracking(false)) // it follows the name, not the ensemble's configuration
	st := watchStates(t, cl.Session)
	id := cl.SessionID()
	require.Equal(t, 1, pFrom.Conns(), "connected through the name's address")
	l, err := zr.NewMutex(cl.Session, testPath(t)).Acquire(ctx)
	require.NoError(t, err)

	// The member goes, and its address with it.
	require.NoError(t, dns.Set(name, "127.0.0.2"))
	require.NoError(t, ens.Kill(from))
	require.NoError(t, pFrom.Close())
	sus := st.next(t, 30*time.Second, zr.StateSuspended, zr.StateLost)
	require.Equal(t, zr.StateSuspended, sus.State)
	q := dns.Queries(name)
	require.Eventually(t, func() bool { return dns.Queries(name) >= q+2 }, 30*time.Second, 10*time.Millisecond,
		"the Session does not look the name up again")
	// The other member answers at 127.0.0.1 on the old port: while the
	// name points elsewhere, the Session does not go there (it follows
	// the name, not an address it resolved before).
	pTo := zktest.NewProxyAt(t, pFrom.Addr(), ens.Servers()[to])
	q = dns.Queries(name)
	require.Eventually(t, func() bool { return dns.Queries(name) >= q+2 }, 30*time.Second, 10*time.Millisecond,
		"the Session does not look the name up again")
	require.Zero(t, pTo.Conns(), "the Session dialled an address the name no longer has")
	require.Equal(t, zr.StateSuspended, cl.State())
	// Now the name's new address is the other member's.
	require.NoError(t, dns.Set(name, "127.0.0.1"))
	back := st.next(t, 30*time.Second, zr.StateReconnected, zr.StateLost)
	require.Equal(t, zr.StateReconnected, back.State, "the session should outlive the move: %v", back.Err)
	assert.Equal(t, id, back.SessionID, "same session")
	assert.Equal(t, id, cl.SessionID())
	assert.Equal(t, 1, pTo.Conns(), "reconnected through the name's new address, to the other member")

	require.NoError(t, l.Err(), "the lease is kept while its session lives")
	obs := raw(t, ens)
	nodes := children(t, obs, testPath(t))
	require.Len(t, nodes, 1)
	_, stat, err := obs.Get(testPath(t) + "/" + nodes[0])
	require.NoError(t, err)
	assert.Equal(t, id, stat.EphemeralOwner, "the lock node still belongs to the session")
	require.NoError(t, l.Release(ctx))
}

// Every name of the ensemble stops resolving while the connection drops:
// the Session is SUSPENDED and keeps looking the names up. When they come
// back within the session timeout it is RECONNECTED under the same
// session; when they come back later, it has reported LOST (presumed
// expired) and is RECONNECTED under a new session.
func TestDNS_EveryNameGoneThenBack(t *testing.T) {
	names := []string{"zk-a.zkrecipes.test", "zk-b.zkrecipes.test"}
	// c grants sessions of the timeout asked for.
	setup := func(t *testing.T, c *zktest.Cluster, timeout time.Duration) (*client, *states, *zktest.Proxy, *zkdns.Server) {
		p := zktest.NewProxy(t, c.Servers()[0])
		dns := zkdns.Start(t)
		var servers []string
		for _, n := range names {
			require.NoError(t, dns.Set(n, "127.0.0.1"))
			servers = append(servers, net.JoinHostPort(n, port(t, p.Addr())))
		}
		cl := connect(t, c, servers, zr.WithResolver(dns.Resolver()), zr.WithSessionTimeout(timeout))
		return cl, watchStates(t, cl.Session), p, dns
	}
	queries := func(dns *zkdns.Server) int {
		n := 0
		for _, name := range names {
			n += dns.Queries(name)
		}
		return n
	}
	goneAndLookedUp := func(t *testing.T, st *states, p *zktest.Proxy, dns *zkdns.Server) {
		for _, n := range names {
			dns.Remove(n)
		}
		p.ResetAll()
		sus := st.next(t, 30*time.Second, zr.StateSuspended, zr.StateLost)
		require.Equal(t, zr.StateSuspended, sus.State)
		q := queries(dns)
		require.Eventually(t, func() bool { return queries(dns) >= q+4 }, 30*time.Second, 10*time.Millisecond,
			"the Session does not keep looking the names up")
	}
	back := func(t *testing.T, dns *zkdns.Server) {
		for _, n := range names {
			require.NoError(t, dns.Set(n, "127.0.0.1"))
		}
	}

	t.Run("within the session timeout: same session", func(t *testing.T) {
		server(t) // the suite's backend must be available
		// Ticks of 1s let sessions last 20s: the names come back well
		// within that, even on a busy machine.
		c := zktest.Start(t, zktest.WithTickTime(time.Second))
		cl, st, p, dns := setup(t, c, 20*time.Second)
		id := cl.SessionID()
		goneAndLookedUp(t, st, p, dns)
		assert.Equal(t, zr.StateSuspended, cl.State(), "still SUSPENDED while no name resolves")
		back(t, dns)
		ch := st.next(t, 30*time.Second, zr.StateReconnected, zr.StateLost)
		require.Equal(t, zr.StateReconnected, ch.State, "%v", ch.Err)
		assert.Equal(t, id, ch.SessionID)
		assert.NoError(t, cl.Err())
	})

	t.Run("beyond the session timeout: LOST, then a new session", func(t *testing.T) {
		cl, st, p, dns := setup(t, server(t), 4*time.Second)
		id := cl.SessionID()
		goneAndLookedUp(t, st, p, dns)
		lost := st.next(t, 30*time.Second, zr.StateLost, zr.StateReconnected)
		require.Equal(t, zr.StateLost, lost.State)
		require.ErrorIs(t, lost.Err, zr.ErrSessionExpired)
		// The Session presumes the session lost when the timeout has
		// passed on its side; the server expires it at its next tick. Two
		// more rounds of lookups (a second apart) and it surely has.
		q := queries(dns)
		require.Eventually(t, func() bool { return queries(dns) >= q+8 }, 30*time.Second, 10*time.Millisecond,
			"the Session does not keep looking the names up once LOST")
		back(t, dns)
		ch := st.next(t, 60*time.Second, zr.StateReconnected)
		assert.NotEqual(t, id, ch.SessionID, "a new session")
		assert.NoError(t, cl.Err())
	})
}
