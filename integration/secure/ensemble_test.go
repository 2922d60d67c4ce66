package secure_test

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// securedEnsemble is a 3-server ensemble, every server enforcing SASL
// (DIGEST-MD5) on its plain port and on a TLS port that requires a client
// certificate, shared by the failover tests (each kills one server and
// restarts it before it ends) and stopped by TestMain.
var securedEnsemble struct {
	once sync.Once
	c    *zktest.Cluster
	err  error
}

func ensemble(t *testing.T) *zktest.Cluster {
	t.Helper()
	securedEnsemble.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		securedEnsemble.c, securedEnsemble.err = zktest.StartCluster(ctx, zktest.WithSize(3),
			zktest.WithSecurity(zktest.WithSASLUsers(users), zktest.WithSASLEnforced(), zktest.WithTLS(zktest.ClientAuthNeed)))
		if securedEnsemble.err == nil {
			t.Logf("secured ensemble serving after %v", securedEnsemble.c.StartDuration())
		}
	})
	if securedEnsemble.err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no secured ZooKeeper ensemble: %v", securedEnsemble.err)
		}
		t.Skipf("no secured ZooKeeper ensemble: %v", securedEnsemble.err)
	}
	return securedEnsemble.c
}

// failOverAndReauthenticate is the failover proof both transports share:
// a Session given every server of c (addrs, indexed like c.Servers())
// holds a lock and a node only sasl:alice may use; the server it is
// connected to (with killLeader, the leader, wherever the Session is) is
// killed; the Session must come back, on another server when its own was
// killed, under the same session id, authenticated there (the enforcing server
// would close an unauthenticated connection at its first request, and the
// node answers only sasl:alice), with the lock still held on the server.
func failOverAndReauthenticate(t *testing.T, c *zktest.Cluster, addrs []string, killLeader bool, opts ...zr.SessionOption) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	opts = append(append([]zr.SessionOption{alice(), zr.WithSessionTimeout(20 * time.Second),
		zr.WithLossPolicy(zr.LoseOnLost), zr.WithACL([]zr.ACL{zr.SASLACL("alice", zr.PermAll)})}, wireLayer()...), opts...)
	s, err := zr.Connect(ctx, addrs, opts...)
	require.NoError(t, err)
	defer s.Close()

	dir := testPath(t)
	lease, err := zr.NewMutex(s, dir+"/lock").Acquire(ctx)
	require.NoError(t, err)
	node := dir + "/alice-only"
	_, err = s.Conn().Create(node, []byte("v0"), 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "sasl", ID: "alice"}})
	require.NoError(t, err)
	id := s.SessionID()
	first := slices.Index(addrs, s.Conn().Server())
	require.GreaterOrEqual(t, first, 0, "connected to %q, not one of %v", s.Conn().Server(), addrs)
	subCtx, stop := context.WithCancel(context.Background())
	states, _ := s.Subscribe(subCtx)
	defer stop()

	victim := first
	if killLeader {
		victim, err = c.WaitLeader(ctx)
		require.NoError(t, err)
	}
	if m, err := c.Srvr(victim); err == nil {
		t.Logf("killing server %d (%s); the Session is on server %d", victim, m["Mode"], first)
	}
	t0 := time.Now()
	require.NoError(t, c.Kill(victim))
	defer func() { require.NoError(t, c.Restart(victim), "the shared ensemble must be whole again") }()
	waitState(t, states, 20*time.Second, zr.StateSuspended)
	ch := waitState(t, states, 30*time.Second, zr.StateReconnected, zr.StateLost)
	require.Equal(t, zr.StateReconnected, ch.State, "err: %v", ch.Err)
	now := slices.Index(addrs, s.Conn().Server())
	t.Logf("reconnected %v after the kill, on server %d", time.Since(t0).Round(time.Millisecond), now)
	require.Equal(t, id, ch.SessionID, "the same session, moved")
	require.GreaterOrEqual(t, now, 0)
	if victim == first {
		require.NotEqual(t, first, now, "on another server of the ensemble")
	}

	data, _, err := s.Conn().Get(node)
	require.NoError(t, err, "readable only as sasl:alice")
	require.Equal(t, "v0", string(data))
	require.NoError(t, lease.Err(), "the session lived, so the lease did")
	_, err = s.Multi(ctx, lease.Check(), zr.SetOp(node, []byte("v1")))
	require.NoError(t, err, "a write fenced by the lease, as sasl:alice, on the new server")
	require.NoError(t, lease.Release(ctx))
}

// A Session on a SASL-enforcing ensemble survives the loss of its server:
// it re-authenticates on another server under the same session id, its
// lock held all along.
func TestSASLSessionFailsOverToAnotherServerAndReauthenticates(t *testing.T) {
	c := ensemble(t)
	failOverAndReauthenticate(t, c, c.Servers(), false)
}

// The same over TLS with a client certificate: the new server's TLS
// handshake and SASL exchange both run again.
func TestTLSAndSASLSessionFailsOverToAnotherServerAndReauthenticates(t *testing.T) {
	c := ensemble(t)
	m := c.TLS()
	failOverAndReauthenticate(t, c, c.TLSServers(), false, zr.WithTLS(m.ClientConfig(true)))
}

// The leader dies: the followers drop their clients until a new leader
// is elected, and the Session, wherever it was, resumes its session
// after the election on a server where it authenticates again.
func TestSASLSessionReauthenticatesAfterLeaderElection(t *testing.T) {
	c := ensemble(t)
	failOverAndReauthenticate(t, c, c.Servers(), true)
}
