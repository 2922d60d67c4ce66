package recipes_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// A leader deposed by the expiry of its session cannot publish data any
// more: its Proclaim fails with ErrNotLeader and the loss, and the new
// leader's data is untouched.
func TestElection_ProclaimOfALeaderWhoseSessionExpiredFailsAndChangesNothing(t *testing.T) {
	c := server(t)
	path := testPath(t)
	ctx := ctxT(t, time.Minute)
	old := connect(t, c, nil, zr.WithLossPolicy(zr.LoseOnLost))
	oldE := zr.NewElection(old.Session, path, zr.WithParticipantID("old"), zr.WithProclaim(true))
	la, err := oldE.Campaign(ctx)
	require.NoError(t, err)
	require.NoError(t, oldE.Proclaim(ctx, la, []byte("old-2")))
	newE := zr.NewElection(connect(t, c, nil).Session, path, zr.WithParticipantID("new"))
	got := campaignBehind(t, ctx, newE, 2)
	old.expire(t)
	lb := (<-got).lease(t)

	err = oldE.Proclaim(ctx, la, []byte("stale"))
	assert.ErrorIs(t, err, zr.ErrNotLeader)
	assert.ErrorIs(t, err, zr.ErrLockLost)
	assert.ErrorIs(t, err, zr.ErrSessionExpired)
	leader, err := newE.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "new", string(leader.Data))
	assert.Equal(t, lb.Token(), leader.Token)
	require.NoError(t, lb.Release(ctx))
}

// Once its Session is closed, a leader's Proclaim fails with ErrNotLeader
// and ErrClosed.
func TestElection_ProclaimAfterCloseFails(t *testing.T) {
	c := server(t)
	ctx := ctxT(t, 30*time.Second)
	cl := connect(t, c, nil)
	e := zr.NewElection(cl.Session, testPath(t), zr.WithProclaim(true))
	l, err := e.Campaign(ctx)
	require.NoError(t, err)
	require.NoError(t, cl.Close())
	err = e.Proclaim(ctx, l, []byte("x"))
	assert.ErrorIs(t, err, zr.ErrNotLeader)
	assert.ErrorIs(t, err, zr.ErrClosed)
}

// A value proclaimed while an observer's connection is down reaches the
// observer once it reconnects: its data watch is set again with the
// session and fires for the change it missed.
func TestElection_ObserverReconnectingSeesAValueProclaimedWhileItWasCutOff(t *testing.T) {
	c := server(t)
	path := testPath(t)
	ctx := ctxT(t, 30*time.Second)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	watcher := zr.NewElection(connect(t, c, []string{proxy.Addr()}).Session, path)
	e := zr.NewElection(connect(t, c, nil).Session, path, zr.WithParticipantID("v1"), zr.WithProclaim(true))
	l, err := e.Campaign(ctx)
	require.NoError(t, err)
	ch, err := watcher.Subscribe(ctx)
	require.NoError(t, err)
	next := func() string {
		select {
		case c, ok := <-ch:
			require.True(t, ok, "observe channel closed early")
			return string(c.Leader.Data)
		case <-ctx.Done():
			require.FailNow(t, "no leader change observed")
			return ""
		}
	}
	assert.Equal(t, "v1", next())

	proxy.Blackhole()
	require.NoError(t, e.Proclaim(ctx, l, []byte("v2")))
	proxy.ResetAll() // the notification, if it was on its way, is lost
	proxy.Heal()
	assert.Equal(t, "v2", next())
	require.NoError(t, l.Release(ctx))
}
