package secure_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// waitState waits for the next change to one of want.
func waitState(t *testing.T, ch <-chan zr.StateChange, timeout time.Duration, want ...zr.ConnState) zr.StateChange {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case c, ok := <-ch:
			require.True(t, ok, "state channel closed while waiting for %v", want)
			for _, w := range want {
				if c.State == w {
					return c
				}
			}
		case <-deadline:
			t.Fatalf("no state in %v within %v", want, timeout)
		}
	}
}

// The server restarts under the Session (same data, so the session
// lives): the new connection runs SASL again before anything else, or the
// enforcing server would close it, and the sasl:alice node stays
// readable under the same session id.
func TestSASLSessionSurvivesServerRestartAndReauthenticates(t *testing.T) {
	srv := zktest.StartSecureServer(t, zktest.WithSASLUsers(users), zktest.WithSASLEnforced())
	s := connect(t, srv.Addr, alice(), zr.WithSessionTimeout(30*time.Second), zr.WithLossPolicy(zr.LoseOnLost),
		zr.WithACL([]zr.ACL{zr.SASLACL("alice", zr.PermAll)}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lease, err := zr.NewMutex(s, "/lock").Acquire(ctx)
	require.NoError(t, err)
	id := s.SessionID()
	subCtx, stop := context.WithCancel(context.Background())
	states, _ := s.Subscribe(subCtx)
	defer stop()

	require.NoError(t, srv.Restart(ctx))
	waitState(t, states, 30*time.Second, zr.StateSuspended)
	c := waitState(t, states, 30*time.Second, zr.StateReconnected, zr.StateLost)
	require.Equal(t, zr.StateReconnected, c.State, "err: %v", c.Err)
	require.Equal(t, id, c.SessionID)
	require.NoError(t, lease.Err())
	kids, _, err := s.Conn().Children("/lock")
	require.NoError(t, err, "readable only as sasl:alice")
	require.Len(t, kids, 1)
	require.NoError(t, lease.Release(ctx))
}

// The password changes on the server while the Session is connected:
// after the restart its new connection is rejected, and the Session
// reports it (StateLost with ErrAuthFailed, its leases lost with that
// cause) instead of redialling for ever.
func TestSASLSessionRejectedOnReconnectIsLostWithErrAuthFailed(t *testing.T) {
	srv := zktest.StartSecureServer(t, zktest.WithSASLUsers(users), zktest.WithSASLEnforced())
	s := connect(t, srv.Addr, alice(), zr.WithSessionTimeout(30*time.Second), zr.WithLossPolicy(zr.LoseOnLost))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lease, err := zr.NewMutex(s, "/lock").Acquire(ctx)
	require.NoError(t, err)
	subCtx, stop := context.WithCancel(context.Background())
	states, _ := s.Subscribe(subCtx)
	defer stop()

	require.NoError(t, srv.SetSASLUsers(map[string]string{"alice": "rotated", "bob": "bob-secret"}))
	require.NoError(t, srv.Restart(ctx))
	c := waitState(t, states, 30*time.Second, zr.StateLost, zr.StateReconnected)
	require.Equal(t, zr.StateLost, c.State)
	require.ErrorIs(t, c.Err, zr.ErrAuthFailed)
	select {
	case <-lease.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("lease not ended")
	}
	require.ErrorIs(t, lease.Err(), zr.ErrLockLost)
	require.ErrorIs(t, lease.Err(), zr.ErrAuthFailed)
	require.ErrorIs(t, s.Err(), zr.ErrAuthFailed)

	// The Session stays down and says why.
	_, err = zr.NewMutex(s, "/lock2").Acquire(ctx)
	require.ErrorIs(t, err, zr.ErrAuthFailed)
}

// After the server expires the session, the next connection's
// ConnectResponse (session 0) passes through untouched; go-zookeeper then
// opens a new session, and that connection runs SASL again: the node only
// sasl:alice may read stays readable. (SASL is optional on this server,
// so the expiring connection needs none.)
func TestSASLNewSessionAfterExpiryAuthenticatesAgain(t *testing.T) {
	srv := tlsNeed.get(t)
	capture := &zktest.SessionCapture{}
	s := connect(t, srv.Addr, alice(), zr.WithDialer(capture.Dialer()), zr.WithSessionTimeout(4*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := "/" + unsafe.ReplaceAllString(t.Name(), "_")
	_, err := s.Conn().Create(p, nil, 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "sasl", ID: "alice"}})
	require.NoError(t, err)
	old := s.SessionID()
	subCtx, stop := context.WithCancel(context.Background())
	states, _ := s.Subscribe(subCtx)
	defer stop()

	id, passwd, ok := capture.Session()
	require.True(t, ok)
	require.Equal(t, old, id)
	require.NoError(t, zktest.ExpireSession(ctx, srv.Addr, id, passwd))
	c := waitState(t, states, 20*time.Second, zr.StateLost)
	require.ErrorIs(t, c.Err, zr.ErrSessionExpired)
	c = waitState(t, states, 20*time.Second, zr.StateReconnected)
	require.NotEqual(t, old, c.SessionID)
	_, _, err = s.Conn().Get(p)
	require.NoError(t, err, "the new session holds sasl:alice")
}

// The server comes back without SASL: the Session's next connection
// cannot authenticate, and the Session is lost with ErrSASLUnavailable.
func TestSASLSessionLostWhenServerRestartsWithoutSASL(t *testing.T) {
	srv := zktest.StartSecureServer(t, zktest.WithSASLUsers(users))
	s := connect(t, srv.Addr, alice(), zr.WithSessionTimeout(30*time.Second), zr.WithLossPolicy(zr.LoseOnLost))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lease, err := zr.NewMutex(s, "/lock").Acquire(ctx)
	require.NoError(t, err)
	subCtx, stop := context.WithCancel(context.Background())
	states, _ := s.Subscribe(subCtx)
	defer stop()

	require.NoError(t, srv.SetServerJAAS(""))
	require.NoError(t, srv.Restart(ctx))
	c := waitState(t, states, 30*time.Second, zr.StateLost, zr.StateReconnected)
	require.Equal(t, zr.StateLost, c.State)
	require.ErrorIs(t, c.Err, zr.ErrSASLUnavailable)
	<-lease.Done()
	require.ErrorIs(t, lease.Err(), zr.ErrSASLUnavailable)
}

// TLS and enforced SASL together across a server restart: the new TLS
// connection authenticates again under the same session, and nothing in
// the restart (refused dials, a port not yet open) is taken for a
// configuration error.
func TestTLSAndSASLSessionSurvivesServerRestart(t *testing.T) {
	srv := zktest.StartSecureServer(t, zktest.WithSASLUsers(users), zktest.WithSASLEnforced(), zktest.WithTLS(zktest.ClientAuthNeed))
	m := srv.TLS()
	s := connect(t, srv.TLSAddr, alice(), zr.WithTLS(m.ClientConfig(true)), zr.WithSessionTimeout(30*time.Second),
		zr.WithACL([]zr.ACL{zr.SASLACL("alice", zr.PermAll), zr.X509ACL(m.ClientDN, zr.PermAll)}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	v := zr.NewSharedValue(s, "/value", []byte("a"))
	_, err := v.Set(ctx, []byte("b"))
	require.NoError(t, err)
	id := s.SessionID()
	subCtx, stop := context.WithCancel(context.Background())
	states, _ := s.Subscribe(subCtx)
	defer stop()

	require.NoError(t, srv.Restart(ctx))
	c := waitState(t, states, 30*time.Second, zr.StateReconnected, zr.StateLost)
	require.Equal(t, zr.StateReconnected, c.State, "err: %v", c.Err)
	require.Equal(t, id, c.SessionID)
	got, err := v.Get(ctx)
	require.NoError(t, err)
	require.Equal(t, "b", string(got.Value))
}
