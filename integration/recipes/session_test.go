package recipes_test

//lint:file-ignore SA1019 WithTracer is deprecated (an adapter on the Observer); it still sees every request with its absolute path, which this file uses.

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
	"go.uber.org/goleak"
)

func TestSession_ConnectAndCloseLeaveNoGoroutine(t *testing.T) {
	c := server(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := ctxT(t, 30*time.Second)
	s, err := zr.Connect(ctx, c.Servers())
	require.NoError(t, err)
	assert.Equal(t, zr.StateConnected, s.State())
	assert.NotZero(t, s.SessionID())
	assert.NoError(t, s.Err())
	changes, _ := s.Subscribe(context.Background())
	l, err := zr.NewMutex(s, testPath(t)).Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
	assert.ErrorIs(t, s.Err(), zr.ErrClosed)
	<-l.Done()
	assert.ErrorIs(t, l.Err(), zr.ErrLockLost)
	assert.ErrorIs(t, l.Err(), zr.ErrClosed)
	for range changes { // closed by Close
	}
	_, err = zr.NewMutex(s, testPath(t)).Acquire(ctx)
	assert.ErrorIs(t, err, zr.ErrClosed)
}

func TestSession_ShortBlackholeSuspendsThenReconnectsSameSession(t *testing.T) {
	c := server(t)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	cl := connect(t, c, []string{proxy.Addr()}, zr.WithSessionTimeout(4*time.Second))
	st := watchStates(t, cl.Session)
	id := cl.SessionID()
	done := cl.Done()

	proxy.Blackhole()
	ch := st.next(t, 10*time.Second, zr.StateSuspended, zr.StateLost)
	require.Equal(t, zr.StateSuspended, ch.State)
	proxy.Heal()
	ch = st.next(t, 10*time.Second, zr.StateReconnected, zr.StateLost)
	require.Equal(t, zr.StateReconnected, ch.State)
	assert.Equal(t, id, ch.SessionID, "same session after a blip shorter than the timeout")
	assert.Equal(t, id, cl.SessionID())
	select {
	case <-done:
		t.Fatal("session reported lost after a short blip")
	default:
	}
}

func TestSession_ForcedExpiryIsLostThenANewSession(t *testing.T) {
	c := server(t)
	cl := connect(t, c, nil)
	st := watchStates(t, cl.Session)
	id := cl.SessionID()
	done := cl.Done()

	cl.expire(t)
	ch := st.next(t, 15*time.Second, zr.StateLost)
	assert.ErrorIs(t, ch.Err, zr.ErrSessionExpired)
	<-done
	ch = st.next(t, 15*time.Second, zr.StateReconnected)
	assert.NotEqual(t, id, ch.SessionID, "a new session after expiry")
	assert.Equal(t, ch.SessionID, cl.SessionID())
	assert.NoError(t, cl.Err(), "the Session goes on under the new session")
}

func TestSession_BlackholeLongerThanTimeoutIsLost(t *testing.T) {
	c := server(t)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	cl := connect(t, c, []string{proxy.Addr()}, zr.WithSessionTimeout(2*time.Second))
	st := watchStates(t, cl.Session)
	id := cl.SessionID()

	proxy.Blackhole()
	st.next(t, 10*time.Second, zr.StateSuspended)
	ch := st.next(t, 10*time.Second, zr.StateLost)
	assert.ErrorIs(t, ch.Err, zr.ErrSessionExpired)
	assert.ErrorIs(t, cl.Err(), zr.ErrSessionExpired)
	proxy.Heal()
	ch = st.next(t, 20*time.Second, zr.StateReconnected)
	assert.NotEqual(t, id, ch.SessionID, "the server expired the old session meanwhile")
}

func TestSession_AdoptsAnExistingConnection(t *testing.T) {
	c := server(t)
	conn, events, err := zktestConnect(c)
	require.NoError(t, err)
	defer conn.Close()
	s, err := zr.NewSession(ctxT(t, 20*time.Second), conn, events)
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, conn.SessionID(), s.SessionID())
	l, err := zr.NewMutex(s, testPath(t)).Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, l.Release(context.Background()))
}

func TestSession_NamespaceRootsEveryPath(t *testing.T) {
	c := server(t)
	cl := connect(t, c, nil, zr.WithNamespace("ns/"+t.Name()))
	ctx := ctxT(t, 20*time.Second)
	l, err := zr.NewMutex(cl.Session, "/lock").Acquire(ctx)
	require.NoError(t, err)
	assert.Regexp(t, `^/lock/_c_[0-9a-f-]{36}-lock-\d{10}$`, l.Path(), "paths are reported inside the namespace")
	kids := children(t, raw(t, c), "/ns/"+t.Name()+"/lock")
	require.Len(t, kids, 1)
	require.NoError(t, l.Release(ctx))
}

func TestSession_TracerSeesEveryOperation(t *testing.T) {
	c := server(t)
	var ops []zr.TraceEvent
	mu := make(chan struct{}, 1)
	mu <- struct{}{}
	cl := connect(t, c, nil, zr.WithTracer(zr.TracerFunc(func(ev zr.TraceEvent) {
		<-mu
		ops = append(ops, ev)
		mu <- struct{}{}
	})))
	ctx := ctxT(t, 20*time.Second)
	l, err := zr.NewMutex(cl.Session, testPath(t)).Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	<-mu
	defer func() { mu <- struct{}{} }()
	var names []string
	for _, op := range ops {
		names = append(names, op.Op)
		assert.Equal(t, cl.SessionID(), op.SessionID)
	}
	assert.Contains(t, names, "create")
	assert.Contains(t, names, "getChildren")
	assert.Equal(t, "delete", names[len(names)-1], "an uncontended release is a plain delete")
}

// Closing a Session on an adopted connection ends its leases and deletes
// their nodes: the caller's connection, and its ZooKeeper session, live on
// and would otherwise keep the lock held.
func TestSession_CloseOnAnAdoptedConnectionDeletesItsNodes(t *testing.T) {
	c := server(t)
	conn, events, err := zktestConnect(c)
	require.NoError(t, err)
	defer conn.Close()
	s, err := zr.NewSession(ctxT(t, 20*time.Second), conn, events)
	require.NoError(t, err)
	path := testPath(t)
	ctx := ctxT(t, 20*time.Second)
	l, err := zr.NewMutex(s, path).Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	<-l.Done()
	assert.ErrorIs(t, l.Err(), zr.ErrClosed)
	assert.Empty(t, children(t, raw(t, c), path), "no node left behind by Close")
	other, err := zr.NewMutex(connect(t, c, nil).Session, path).TryAcquire(ctx)
	require.NoError(t, err, "the lock is free")
	require.NoError(t, other.Release(ctx))
	assert.Equal(t, zk.StateHasSession, conn.State(), "the caller's connection is left open")
}

// Close on an adopted connection deletes only the nodes of the connection's
// current session: an ephemeral node of a session that expired went with
// it, and a node made on its path since is someone else's.
func TestSession_CloseOnAnAdoptedConnectionLeavesANodeOfAnotherSessionOnItsPath(t *testing.T) {
	c := server(t)
	capture := &zktest.SessionCapture{}
	conn, events, err := zk.Connect(c.Servers(), 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}), zk.WithDialer(capture.Dialer()))
	require.NoError(t, err)
	defer conn.Close()
	s, err := zr.NewSession(ctxT(t, 20*time.Second), conn, events)
	require.NoError(t, err)
	ctx := ctxT(t, 30*time.Second)
	obs := raw(t, c)
	dir := testPath(t)
	freshPath(t, obs, dir)
	mkdirs(t, obs, dir)
	p := dir + "/leader"
	_, err = s.Create(ctx, p, nil, zr.WithMode(zr.ModeEphemeral))
	require.NoError(t, err)
	old := conn.SessionID()
	require.NoError(t, c.ExpireSession(ctx, capture))
	require.Eventually(t, func() bool { id := conn.SessionID(); return id != old && id != 0 }, 20*time.Second, 10*time.Millisecond,
		"the adopted connection has a new session")
	_, err = obs.Create(p, []byte("theirs"), zk.FlagEphemeral, worldACL())
	require.NoError(t, err, "the expired session's node went with it")

	require.NoError(t, s.Close())
	data, _, err := obs.Get(p)
	require.NoError(t, err, "Close left the other session's node")
	assert.Equal(t, "theirs", string(data))
}
