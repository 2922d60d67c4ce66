package zktest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/zktest"
	"github.com/zkrecipes/zkrecipes/zktest/internal/testclient"
)

func TestExpireSession_ClientSeesExpiryThenNewSession(t *testing.T) {
	c := zktest.Start(t)
	var capture zktest.SessionCapture
	conn, ev := testclient.Connect(t, c.Servers(), 10*time.Second, capture.Dialer())
	id, pw, ok := capture.Session()
	require.True(t, ok)
	require.Equal(t, conn.SessionID(), id)
	require.Len(t, pw, 16)
	_, err := conn.Create("/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)

	n := ev.Len()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, c.ExpireSession(ctx, &capture))
	ev.WaitState(t, n, zk.StateExpired, 20*time.Second)
	require.Eventually(t, func() bool {
		s := conn.SessionID()
		return s != 0 && s != id && conn.State() == zk.StateHasSession
	}, 20*time.Second, 20*time.Millisecond)
	newID, _, _ := capture.Session()
	require.Equal(t, conn.SessionID(), newID, "capture follows the new session")

	ok, _, err = conn.Exists("/eph")
	require.NoError(t, err)
	require.False(t, ok, "ephemeral node of the expired session still exists")

	// The old session is gone for good.
	err = zktest.ExpireSession(ctx, c.Servers()[0], id, pw)
	require.True(t, errors.Is(err, zktest.ErrSessionNotFound), "got %v", err)
}

func TestExpireSession_NoCapture(t *testing.T) {
	var capture zktest.SessionCapture
	c := &zktest.Cluster{}
	require.ErrorIs(t, c.ExpireSession(context.Background(), &capture), zktest.ErrNoSession)
}
