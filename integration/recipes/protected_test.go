package recipes_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// ZOOKEEPER-1262: a create can succeed on the server while its reply is
// lost. The protected create finds its node by its UUID after the
// reconnect and adopts it, instead of queueing a second node.
func TestProtectedCreate_AdoptsItsNodeAfterTheReplyWasLost(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	cl := connect(t, c, []string{proxy.Addr()}, zr.WithSessionTimeout(8*time.Second), zr.WithLossPolicy(zr.LoseOnLost))
	id := cl.SessionID()
	ctx := ctxT(t, 30*time.Second)

	proxy.SetDelay(700 * time.Millisecond) // replies linger in the proxy
	type result struct {
		l   *zr.Lease
		err error
	}
	res := make(chan result, 1)
	go func() {
		l, err := zr.NewMutex(cl.Session, path).Acquire(ctx)
		res <- result{l, err}
	}()
	var created []string
	require.Eventually(t, func() bool { created = children(t, conn, path); return len(created) == 1 }, 10*time.Second, time.Millisecond,
		"the create reached the server")
	proxy.ResetAll() // ... and its reply is lost with the connection
	proxy.SetDelay(0)
	r := <-res
	require.NoError(t, r.err)
	assert.Equal(t, path+"/"+created[0], r.l.Path(), "the node created before the reset is adopted")
	assert.Equal(t, created, children(t, conn, path), "no second node")
	assert.Equal(t, id, cl.SessionID(), "same session throughout")
	require.NoError(t, r.l.Release(ctx))
}
