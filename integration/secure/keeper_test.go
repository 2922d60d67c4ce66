package secure_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// A PersistentNode whose Session is lost because the server no longer
// takes its credentials says why: its Status carries ErrAuthFailed, and a
// wait for the node returns it at once, not ErrClosed.
func TestSASLKeeperOfASessionRejectedOnReconnectSaysErrAuthFailed(t *testing.T) {
	srv, s, ctx := aliceToBeRefused(t)
	n := zr.NewPersistentNode(s, "/keeper/a", []byte("x"))
	require.NoError(t, n.Start(ctx))
	defer func() { _ = n.Close(ctx) }()
	require.NoError(t, n.WaitInPlace(ctx))

	refuseAlice(t, ctx, srv)
	require.Eventually(t, func() bool { st, _ := n.Status(); return st.Err != nil }, 30*time.Second, 20*time.Millisecond)
	st, _ := n.Status()
	assert.False(t, st.InPlace)
	assert.ErrorIs(t, st.Err, zr.ErrAuthFailed)
	wctx, wcancel := context.WithTimeout(ctx, 2*time.Second)
	defer wcancel()
	assert.ErrorIs(t, n.WaitInPlace(wctx), zr.ErrAuthFailed, "at once, and why")
}

// aliceToBeRefused returns a SASL-enforcing server, a Session of alice's on
// it that rides out short losses (LoseOnLost, 30 s), and a ctx of 60 s
// ending with the test; refuseAlice then makes the server refuse her.
func aliceToBeRefused(t *testing.T) (*zktest.SecureServer, *zr.Session, context.Context) {
	t.Helper()
	srv := zktest.StartSecureServer(t, zktest.WithSASLUsers(users), zktest.WithSASLEnforced())
	s := connect(t, srv.Addr, alice(), zr.WithSessionTimeout(30*time.Second), zr.WithLossPolicy(zr.LoseOnLost))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return srv, s, ctx
}

// refuseAlice rotates alice's password on the server and restarts it: the
// Session's next reconnection is refused for good.
func refuseAlice(t *testing.T, ctx context.Context, srv *zktest.SecureServer) {
	t.Helper()
	require.NoError(t, srv.SetSASLUsers(map[string]string{"alice": "rotated", "bob": "bob-secret"}))
	require.NoError(t, srv.Restart(ctx))
}
