package zkr_test

import (
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestZkrBarrier_WaitReturnsOnceRemovedAndElapsesWithExit73(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t) + "/b"

	code, _, stderr := run(t, c.ConnectString(), "barrier", "set", path)
	require.Zero(t, code, stderr)
	_, st, err := conn.Get(path)
	require.NoError(t, err)
	assert.Zero(t, st.EphemeralOwner, "the barrier outlives zkr")

	code, _, stderr = run(t, c.ConnectString(), "barrier", "wait", path, "--wait", "300ms")
	assert.Equal(t, 73, code, stderr)

	waiter := start(t, c.ConnectString(), "barrier", "wait", path, "-v")
	require.Eventually(t, func() bool { return strings.Contains(waiter.stderr.String(), "state=CONNECTED") }, 20*time.Second, 10*time.Millisecond)
	require.Never(t, func() bool {
		select {
		case <-waiter.done:
			return true
		default:
			return false
		}
	}, 300*time.Millisecond, 10*time.Millisecond, "zkr barrier wait exited while the barrier is set")
	code, _, stderr = run(t, c.ConnectString(), "barrier", "remove", path)
	require.Zero(t, code, stderr)
	assert.Zero(t, waiter.wait(t, 30*time.Second))
	_, _, err = conn.Get(path)
	assert.ErrorIs(t, err, zk.ErrNoNode)

	code, _, _ = run(t, c.ConnectString(), "barrier", "lift", path)
	assert.Equal(t, 64, code, "an unknown action is a usage error")
	code, _, _ = run(t, c.ConnectString(), "barrier", "wait", "relative")
	assert.Equal(t, 64, code, "a bad path is a usage error")
}
