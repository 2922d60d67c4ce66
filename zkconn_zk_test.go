package zkrecipes

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// go-zookeeper answered a request whose write failed twice; for the
// credentials it re-sends after a reconnection, the second answer blocked
// its connection loop for good: the Session never connected again.
func TestZKSessionReconnectsWhenItsCredentialsCannotBeWrittenAfterAReconnection(t *testing.T) {
	d := &requestDropper{}
	ctx, s := d.session(t, 60*time.Second, WithDigestAuth("zkt", "secret"))
	_, err := s.Exists(ctx, "/")
	require.NoError(t, err)

	d.dropNext(opSetAuth, 1) // the credentials' write on the next connection fails
	dials := d.dialled()
	d.cut()
	require.Eventually(t, func() bool { return d.dialled() >= dials+2 }, 20*time.Second, 10*time.Millisecond,
		"the Session dialled no third connection after the credentials' write failed on the second")
	require.Zero(t, d.left(opSetAuth), "the credentials' write failed")
	_, err = s.Exists(ctx, "/")
	require.NoError(t, err, "the Session is usable on the third connection")
}
