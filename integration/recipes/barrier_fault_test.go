package recipes_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/zktest"
)

// A member create that ran on the server while its reply was lost, then
// given up on by the retry policy, leaves no member behind: the node
// would make the others pass Enter one short. This failed before Enter
// deleted what such a create may have made (the node stayed under the
// live, resumed session).
func TestDoubleBarrier_EnterThatGivesUpAfterALostCreateReplyLeavesNoMember(t *testing.T) {
	c := server(t)
	path := testPath(t)
	obs := raw(t, c)
	for _, p := range []string{"/t", path} {
		if _, err := obs.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			require.NoError(t, err)
		}
	}
	t.Cleanup(func() { _ = obs.Delete(path, -1) })
	proxy := zktest.NewProxy(t, c.Servers()[0])
	m := connect(t, c, []string{proxy.Addr()}, zr.WithRetryPolicy(zr.NoRetry()))
	st := watchStates(t, m.Session)
	ctx := ctxT(t, time.Minute)
	sid := m.Conn().SessionID()

	proxy.LoseReplies(500 * time.Millisecond) // the member create is the first request
	err := zr.NewDoubleBarrier(m.Session, path, 2).Enter(ctx)
	require.ErrorIs(t, err, zr.ErrRetriesExhausted)
	st.next(t, 10*time.Second, zr.StateReconnected)
	require.Equal(t, sid, m.Conn().SessionID(), "the same session, which would keep the node")

	require.Eventually(t, func() bool { return len(children(t, obs, path)) == 0 }, 10*time.Second, 20*time.Millisecond,
		"no member node may stay after Enter failed")
}
