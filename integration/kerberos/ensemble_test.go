package kerberos_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// A Session on a 3-server ensemble whose every server enforces Kerberos
// (each the service principal zookeeper/localhost, all on 127.0.0.1) holds
// a lock; its server is killed; it resumes the same session on another
// server, where the GSSAPI exchange runs again (the enforcing server would
// close the connection at its first request otherwise): a node only its
// principal may use is readable and writable there, and the lock was held
// throughout.
func TestKerberosSessionFailsOverToAnotherServerAndReauthenticates(t *testing.T) {
	k, _ := setup(t)
	c := zktest.Start(t, zktest.WithSize(3), zktest.WithSecurity(zktest.WithKerberos(k), zktest.WithSASLEnforced()))
	t.Logf("Kerberos ensemble serving after %v", c.StartDuration())
	alice := mech(t, "alice", k.Keytab("alice"))
	counted := &countingMech{SASLMechanism: alice}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	addrs := c.Servers()
	s, err := zr.Connect(ctx, addrs, zr.WithSASL(counted), zr.WithSessionTimeout(20*time.Second),
		zr.WithLossPolicy(zr.LoseOnLost), zr.WithACL([]zr.ACL{zr.SASLACL(alice.Principal(), zr.PermAll)}))
	require.NoError(t, err)
	defer s.Close()

	p := testPath(t)
	lease, err := zr.NewMutex(s, p+"/lock").Acquire(ctx)
	require.NoError(t, err)
	node := p + "/alice-only"
	_, err = s.Conn().Create(node, []byte("v0"), 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "sasl", ID: alice.Principal()}})
	require.NoError(t, err)
	id := s.SessionID()
	first := slices.Index(addrs, s.Conn().Server())
	require.GreaterOrEqual(t, first, 0)
	exchanges := counted.starts.Load()
	subCtx, stop := context.WithCancel(context.Background())
	states, _ := s.Subscribe(subCtx)
	defer stop()

	if m, err := c.Srvr(first); err == nil {
		t.Logf("killing server %d (%s), the Session's", first, m["Mode"])
	}
	require.NoError(t, c.Kill(first))
	ch := waitFor(t, states, 30*time.Second, zr.StateReconnected, zr.StateLost)
	require.Equal(t, zr.StateReconnected, ch.State, "err: %v", ch.Err)
	require.Equal(t, id, ch.SessionID, "the same session, moved")
	now := slices.Index(addrs, s.Conn().Server())
	require.GreaterOrEqual(t, now, 0)
	require.NotEqual(t, first, now, "on another server of the ensemble")

	data, _, err := s.Conn().Get(node)
	require.NoError(t, err, "readable only as sasl:%s", alice.Principal())
	require.Equal(t, "v0", string(data))
	require.NoError(t, lease.Err())
	_, err = s.Multi(ctx, lease.Check(), zr.SetOp(node, []byte("v1")))
	require.NoError(t, err, "a write fenced by the lease, on the new server")
	require.Greater(t, counted.starts.Load(), exchanges, "a GSSAPI exchange on the new connection")
	require.NoError(t, lease.Release(ctx))
}

// waitFor waits for the next change to one of want.
func waitFor(t *testing.T, ch <-chan zr.StateChange, timeout time.Duration, want ...zr.ConnState) zr.StateChange {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case c, ok := <-ch:
			require.True(t, ok, "state channel closed while waiting for %v", want)
			if slices.Contains(want, c.State) {
				return c
			}
		case <-deadline:
			t.Fatalf("no state in %v within %v", want, timeout)
		}
	}
}
