package secure_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/discovery"
)

const refuseBound = 15 * time.Second // a refused client is told within this, on a loaded machine

func alice() zr.SessionOption { return zr.WithSASL(zr.DigestMD5("alice", "alice-secret")) }
func bob() zr.SessionOption   { return zr.WithSASL(zr.DigestMD5("bob", "bob-secret")) }

// exerciseRecipes runs a lock, a node cache and service discovery on s
// under dir, each node created with the Session's ACL.
func exerciseRecipes(t *testing.T, s *zr.Session, dir string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	lease, err := zr.NewMutex(s, dir+"/lock").Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, lease.Err())
	require.NoError(t, lease.Release(ctx))

	v := zr.NewSharedValue(s, dir+"/value", []byte("seed"))
	cache := zr.NewNodeCache(s, dir+"/value")
	require.NoError(t, cache.Start(ctx))
	defer cache.Close(context.Background())
	_, err = v.Set(ctx, []byte("v1"))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		n, ok := cache.Get()
		return ok && string(n.Data) == "v1"
	}, 10*time.Second, 10*time.Millisecond)

	d := discovery.New(s, dir+"/services")
	defer func() { _ = d.Close(context.Background()) }()
	require.NoError(t, d.Register(ctx, discovery.Instance{Name: "api", ID: "i1", Address: "127.0.0.1", Port: 8080}))
	got, err := d.QueryForInstances(ctx, "api")
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, 8080, got[0].Port)
}

func TestSASLSessionRunsRecipesOnEnforcingServer(t *testing.T) {
	srv := enforced.get(t)
	s := connect(t, srv.Addr, alice(), zr.WithACL([]zr.ACL{zr.SASLACL("alice", zr.PermAll)}))
	exerciseRecipes(t, s, testPath(t))
}

// The same with the wire layer off, over a dialer of the caller's
// (WithDialer composes: SASL runs over the connection it returns).
func TestSASLComposesWithCallersDialerAndWireLayerOff(t *testing.T) {
	srv := enforced.get(t)
	var dials int
	dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
		dials++ // go-zookeeper dials from one goroutine
		return net.DialTimeout(network, address, timeout)
	}
	s := connect(t, srv.Addr, alice(), zr.WithWireLayer(false), zr.WithDialer(dial))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lease, err := zr.NewMutex(s, testPath(t)).Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, lease.Release(ctx))
	require.Equal(t, 1, dials)
}

func TestSASLIdentityGrantsTheNodeOnlyToItsUser(t *testing.T) {
	srv := enforced.get(t)
	a := connect(t, srv.Addr, alice(), zr.WithACL([]zr.ACL{zr.SASLACL("alice", zr.PermAll)}))
	b := connect(t, srv.Addr, bob())
	p := testPath(t)
	_, err := a.Conn().Create(p, []byte("a"), 0, zk.WorldACL(zk.PermAll))
	if !errors.Is(err, zk.ErrNodeExists) {
		require.NoError(t, err)
	}
	_, err = a.Conn().Create(p+"/only-alice", []byte("secret"), 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "sasl", ID: "alice"}})
	require.NoError(t, err)
	data, _, err := a.Conn().Get(p + "/only-alice")
	require.NoError(t, err)
	require.Equal(t, "secret", string(data))
	_, _, err = b.Conn().Get(p + "/only-alice")
	require.ErrorIs(t, err, zk.ErrNoAuth)
}

func TestSASLWrongPasswordFailsConnectWithErrAuthFailedOnce(t *testing.T) {
	srv := enforced.get(t)
	for name, m := range map[string]zr.SASLMechanism{
		"wrong password": zr.DigestMD5("alice", "not-her-password"),
		"unknown user":   zr.DigestMD5("mallory", "x"),
	} {
		t.Run(name, func(t *testing.T) {
			var dials int
			dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
				dials++
				return net.DialTimeout(network, address, timeout)
			}
			took, err := connectErr(t, srv.Addr, zr.WithSASL(m), zr.WithDialer(dial))
			require.ErrorIs(t, err, zr.ErrAuthFailed)
			require.NotErrorIs(t, err, zr.ErrSASLMechanism)
			require.Less(t, took, refuseBound)
			require.Equal(t, 1, dials, "no redial after the server rejected the credentials")
		})
	}
}

// An enforcing server closes the connection of a Session without SASL on
// its first request (err -124): the request fails with ErrSASLRequired,
// and so does the Session, instead of redialling.
func TestSessionWithoutSASLIsRefusedByEnforcingServerAndTold(t *testing.T) {
	srv := enforced.get(t)
	// Without following the ensemble, Connect sends no request: the
	// refusal comes at the first request of a recipe.
	s := connect(t, srv.Addr, zr.WithEnsembleTracking(false))
	ctx, cancel := context.WithTimeout(context.Background(), refuseBound)
	defer cancel()
	_, err := zr.NewMutex(s, testPath(t)).Acquire(ctx)
	require.ErrorIs(t, err, zr.ErrSASLRequired)
	require.NoError(t, ctx.Err())
	require.Eventually(t, func() bool { return s.State() == zr.StateLost }, refuseBound, 10*time.Millisecond)
	require.ErrorIs(t, s.Err(), zr.ErrSASLRequired)
}

// A Session that follows the ensemble (the default) reads its
// configuration inside Connect: against a server that requires SASL,
// Connect itself fails, at once, with ErrSASLRequired.
func TestConnectWithoutSASLToEnforcingServerFailsWithErrSASLRequired(t *testing.T) {
	srv := enforced.get(t)
	took, err := connectErr(t, srv.Addr)
	require.ErrorIs(t, err, zr.ErrSASLRequired)
	require.ErrorIs(t, err, zr.ErrNoServerAccepted)
	require.Less(t, took, refuseBound, "refused at once")
}

// An idle Session without SASL is refused too, on its first ping, and
// is lost with ErrSASLRequired instead of reconnecting every few seconds.
func TestIdleSessionWithoutSASLIsLostWithErrSASLRequired(t *testing.T) {
	srv := enforced.get(t)
	s := connect(t, srv.Addr, zr.WithSessionTimeout(3*time.Second), zr.WithEnsembleTracking(false))
	subCtx, stop := context.WithCancel(context.Background())
	states, _ := s.Subscribe(subCtx)
	defer stop()
	c := waitState(t, states, refuseBound, zr.StateLost, zr.StateReconnected)
	require.Equal(t, zr.StateLost, c.State)
	require.ErrorIs(t, c.Err, zr.ErrSASLRequired)
	require.ErrorIs(t, s.Err(), zr.ErrSASLRequired)
}

func TestSASLAgainstServerWithoutSASLFailsWithErrSASLUnavailable(t *testing.T) {
	srv := noSASL.get(t)
	took, err := connectErr(t, srv.Addr, alice())
	require.ErrorIs(t, err, zr.ErrSASLUnavailable)
	require.ErrorIs(t, err, zr.ErrAuthFailed)
	require.Less(t, took, refuseBound)
}

// plain is a SASL mechanism no ZooKeeper server speaks (RFC 4616 PLAIN).
type plain struct{}

func (plain) Name() string { return "PLAIN" }
func (plain) Start(context.Context, string) (zr.SASLClient, []byte, error) {
	return plainClient{}, []byte("\x00alice\x00alice-secret"), nil
}

type plainClient struct{}

// Step expects no challenge: PLAIN has none. (ZooKeeper's DIGEST-MD5
// server answers any first token with its challenge.)
func (plainClient) Step(_ context.Context, challenge []byte) ([]byte, bool, error) {
	if len(challenge) > 0 {
		return nil, false, fmt.Errorf("%w: PLAIN got a challenge %q", zr.ErrSASLMechanism, challenge)
	}
	return nil, true, nil
}

// The server speaks DIGEST-MD5 only: a mechanism that finds the server's
// token is not of its kind says so (ErrSASLMechanism), and Connect fails
// with it once.
func TestSASLUnknownMechanismFailsConnectWithErrSASLMechanismOnce(t *testing.T) {
	srv := enforced.get(t)
	var dials int
	dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
		dials++
		return net.DialTimeout(network, address, timeout)
	}
	took, err := connectErr(t, srv.Addr, zr.WithSASL(plain{}), zr.WithDialer(dial))
	require.ErrorIs(t, err, zr.ErrSASLMechanism)
	require.ErrorIs(t, err, zr.ErrAuthFailed)
	require.Less(t, took, refuseBound)
	require.Equal(t, 1, dials)
}
