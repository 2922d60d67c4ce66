package recipes_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
)

func TestEnsemble_SessionAndLeaseSurviveALeaderKill(t *testing.T) {
	server(t) // the suite's backend must be available
	ens := zktest.Start(t, zktest.WithSize(3))
	ctx := ctxT(t, 2*time.Minute)
	leader, err := ens.WaitLeader(ctx)
	require.NoError(t, err)
	// Connected through a follower, so that the kill does not cut the
	// client's own connection: the session must live on.
	follower := ens.Servers()[(leader+1)%3]
	cl := connect(t, ens, []string{follower}, zr.WithSessionTimeout(8*time.Second))
	st := watchStates(t, cl.Session)
	id := cl.SessionID()
	l, err := zr.NewMutex(cl.Session, testPath(t)).Acquire(ctx)
	require.NoError(t, err)

	require.NoError(t, ens.Kill(leader))
	_, err = ens.WaitLeader(ctx)
	require.NoError(t, err, "the two survivors elect a new leader")
	// The session is usable again: another lock works on it.
	l2, err := zr.NewMutex(cl.Session, testPath(t)+"-after").Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, l2.Release(ctx))
	assert.Equal(t, id, cl.SessionID(), "same session across the leader change")
	for {
		select {
		case ch := <-st.ch:
			assert.NotEqual(t, zr.StateLost, ch.State, "the session was never lost")
			continue
		default:
		}
		break
	}
	if l.Err() == nil {
		require.NoError(t, l.Release(ctx))
	} else {
		// The follower drops its clients while it re-syncs with the new
		// leader: SUSPENDED, so under the default policy the lease ended.
		assert.ErrorIs(t, l.Err(), zr.ErrSuspended)
	}
	require.NoError(t, ens.Restart(leader))
}
