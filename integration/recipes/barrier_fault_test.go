package recipes_test

import (
	"fmt"
	"slices"
	"sync"
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

// opLog records a Session's operations (its Tracer), for a test to see
// how far a recipe has gone.
type opLog struct {
	mu  sync.Mutex
	evs []zr.TraceEvent
}

func (l *opLog) TraceOp(ev zr.TraceEvent) {
	l.mu.Lock()
	l.evs = append(l.evs, ev)
	l.mu.Unlock()
}

// reset forgets every operation recorded so far.
func (l *opLog) reset() {
	l.mu.Lock()
	l.evs = nil
	l.mu.Unlock()
}

// since returns the operations recorded since the last reset.
func (l *opLog) since() []zr.TraceEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.evs)
}

// A member whose delete of its own node in Leave ran on the server while
// its reply was lost (ZOOKEEPER-1262) finds its node gone once it has
// reconnected. That is its own leave, not another client's delete: it
// waits, as every member that is not the lowest does, until the lowest
// member has left, and then returns nil. Before, Leave failed at once with
// ErrNodeDeleted ("deleted by another client") while the lowest member had
// not begun to leave.
//
// The lowest member is a node of a plain client named "0", which sorts
// before every member's UUID, so that the member behind the proxy is never
// the lowest; in odd rounds a third member leaves beside it.
func TestDoubleBarrier_LeaveWhoseDeleteReplyIsLostWaitsForTheOthers(t *testing.T) {
	c := server(t)
	path := testPath(t)
	obs := raw(t, c)
	mkdirs(t, obs, path)
	t.Cleanup(func() { _ = obs.Delete(path, -1) })
	proxy := zktest.NewProxy(t, c.Servers()[0])
	ops := &opLog{}
	// The proxy twice: go-zookeeper then reconnects at once (see
	// newLostReplyRig).
	lossy := connect(t, c, []string{proxy.Addr(), proxy.Addr()}, zr.WithSessionTimeout(8*time.Second), zr.WithTracer(ops))
	third := connect(t, c, nil)
	// A watch to re-set on each reconnection, so that the Session holds
	// no reply after it (see newLostReplyRig). It never fires.
	_, _, _, err := lossy.Conn().ExistsW(path)
	require.NoError(t, err)
	ctx := ctxT(t, 2*time.Minute)
	lowest := path + "/0"

	const rounds = 20
	hit, round := 0, 0 // hit: rounds where the delete's reply was the one lost
	for ; hit < rounds; round++ {
		require.Less(t, round, rounds+10, "the fault missed Leave's delete in %d rounds", round-hit)
		name := fmt.Sprintf("round %d", round)
		_, err := obs.Create(lowest, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		require.NoError(t, err, name)
		members := []*zr.DoubleBarrier{zr.NewDoubleBarrier(lossy.Session, path, 2)}
		if round%2 == 1 {
			members = []*zr.DoubleBarrier{zr.NewDoubleBarrier(lossy.Session, path, 3), zr.NewDoubleBarrier(third.Session, path, 3)}
		}
		entered := make(chan error, len(members))
		for _, m := range members {
			go func() { entered <- m.Enter(ctx) }()
		}
		for range members {
			require.NoError(t, <-entered, name)
		}

		// The Session behind the proxy is idle on one live connection:
		// its next replies are Leave's listing, then its delete.
		require.Eventually(t, func() bool {
			if proxy.Conns() != 1 || !connected(lossy.State()) {
				return false
			}
			_, _, err := lossy.Conn().Exists(path)
			return err == nil && proxy.Conns() == 1
		}, 10*time.Second, 5*time.Millisecond, name)
		ops.reset()
		proxy.LoseRepliesAfter(1, time.Duration(20+(round*97)%400)*time.Millisecond)
		left := make([]chan error, len(members))
		for i, m := range members {
			left[i] = make(chan error, 1)
			go func() { left[i] <- m.Leave(ctx) }()
		}

		// The lossy member has done all it can before the lowest leaves
		// once it watches the lowest after its failed delete, or has
		// returned.
		lost, watching := false, false
		require.Eventually(t, func() bool {
			lost, watching = false, false
			for _, ev := range ops.since() {
				switch {
				case ev.Op == "delete" && ev.Err != nil:
					lost = true
				case lost && ev.Op == "getData" && ev.Path == lowest && ev.Err == nil:
					watching = true
				}
			}
			return watching || barrierDone(left[0])
		}, 20*time.Second, 5*time.Millisecond, name)
		if barrierDone(left[0]) {
			require.Fail(t, "Leave returned while the lowest member had not begun to leave", "%s: %v", name, <-left[0])
		}
		if lost {
			hit++
		}
		ok, _, err := obs.Exists(lowest)
		require.NoError(t, err)
		require.True(t, ok, name)

		require.NoError(t, obs.Delete(lowest, -1), name) // the lowest leaves
		for i := range members {
			require.Eventually(t, func() bool { return barrierDone(left[i]) }, 20*time.Second, 5*time.Millisecond, "%s: member %d", name, i)
			require.NoError(t, <-left[i], "%s: member %d", name, i)
		}
		require.Eventually(t, func() bool { return len(children(t, obs, path)) == 0 }, 10*time.Second, 5*time.Millisecond,
			"%s: nothing left behind, ready included", name)
	}
	t.Logf("%d rounds, %d with the delete's reply lost", round, hit)
}
