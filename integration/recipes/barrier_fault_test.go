package recipes_test

//lint:file-ignore SA1019 WithTracer is deprecated (an adapter on the Observer); it still sees every request with its absolute path, which this file uses.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
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
		// once it has deleted its node and then watches the lowest, or has
		// returned. The round is a hit when its delete failed: the reply let
		// through was its listing's and the delete's was lost. On a busy
		// machine a ping's or a notification's reply can come first, so
		// that the listing's reply is the one lost, or the loss can miss
		// both: the member then lists (again) and deletes, and the round is
		// a miss.
		lost, watching := false, false
		require.Eventually(t, func() bool {
			lost, watching = false, false
			deleted := false
			for _, ev := range ops.since() {
				switch {
				case ev.Op == "delete":
					deleted = true
					lost = lost || ev.Err != nil
				case deleted && ev.Op == "getData" && ev.Path == lowest && ev.Err == nil:
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

// A member waiting in Enter whose Session gives its ZooKeeper session up
// (the connection down for the whole session timeout) while the server
// keeps it, so that the member's node survives, has lost its place with
// that session: Enter returns an error matching ErrSessionExpired, and its
// node is deleted. Before, Enter listed the barrier again and again, as
// fast as the server answered: its wait woke on the ended session every
// time, and the listing still showed its node.
//
// To bring that about, the Session behind the proxy is reset and each of
// its reconnections loses the server's reply to its connect request (the
// request itself reaches the server, which so keeps the session), until
// the Session has presumed the session lost. go-zookeeper keeps a request
// made while it is disconnected for its next connection, unless it first
// goes through its list of servers again, where it fails the request: the
// attempts that follow that (every other one) are held long, so that the
// Session most likely gives up during one of them and Enter's next listing
// is sent on the next attempt, which goes through.
func TestDoubleBarrier_EnterReturnsWhenItsSessionIsGivenUpWhileItsNodeSurvives(t *testing.T) {
	c := server(t)
	path := testPath(t)
	obs := raw(t, c)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	ops := &opLog{}
	const timeout = 2 * time.Second
	lossy := connect(t, c, []string{proxy.Addr(), proxy.Addr()}, zr.WithSessionTimeout(timeout), zr.WithTracer(ops))
	st := watchStates(t, lossy.Session)

	for round, hold := range []time.Duration{time.Second, 1200 * time.Millisecond, 1400 * time.Millisecond} {
		name := fmt.Sprintf("round %d", round)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		ops.reset()
		got := make(chan error, 1)
		go func() { got <- zr.NewDoubleBarrier(lossy.Session, path, 2).Enter(ctx) }()
		// Enter waits: its node is there and it has listed the barrier.
		require.Eventually(t, func() bool {
			for _, ev := range ops.since() {
				if ev.Op == "getChildren" && ev.Path == path && ev.Err == nil {
					return true
				}
			}
			return false
		}, 10*time.Second, 5*time.Millisecond, name)
		id := lossy.SessionID()

		// Attempt 1 comes at once, attempt 2 after go-zookeeper's pause of a
		// second, 3 at once, 4 after a pause, ... The even ones are held.
		holdOf := func(attempt int) time.Duration {
			if attempt%2 == 0 {
				return hold
			}
			return 100 * time.Millisecond
		}
		armed := []<-chan struct{}{proxy.LoseRepliesOnNextConn(0, holdOf(1)), proxy.LoseRepliesOnNextConn(0, holdOf(2))}
		proxy.ResetAll()
		lostAt := time.Time{}
		for lostAt.IsZero() {
			select {
			case <-armed[len(armed)-2]:
				armed = append(armed, proxy.LoseRepliesOnNextConn(0, holdOf(len(armed)+1)))
			case ch := <-st.ch:
				if ch.State == zr.StateLost {
					lostAt = ch.At
				}
			case <-time.After(4 * timeout):
				t.Fatalf("%s: the Session did not give its session up", name)
			}
		}
		proxy.Disarm() // the next attempt goes through
		st.next(t, 10*time.Second, zr.StateReconnected)
		require.Equal(t, id, lossy.SessionID(), "%s: the same session: the node survived", name)

		// Enter returns, and does not list the barrier over and over.
		listings := func() (n int) {
			for _, ev := range ops.since() {
				if ev.Op == "getChildren" && ev.Path == path && ev.Err == nil && time.Now().Add(-ev.Latency).After(lostAt) {
					n++
				}
			}
			return n
		}
		require.Eventually(t, func() bool { return barrierDone(got) || listings() > 50 }, 10*time.Second, 5*time.Millisecond, name)
		require.LessOrEqual(t, listings(), 5, "%s: Enter lists the barrier in a loop", name)
		require.ErrorIs(t, <-got, zr.ErrSessionExpired, name)
		require.Eventually(t, func() bool { return len(children(t, obs, path)) == 0 }, 10*time.Second, 10*time.Millisecond,
			"%s: the member's node is deleted", name)
	}
}

// The other side of the lost-reply case: a member whose node another
// client deleted before its Leave sent a delete is told so.
func TestDoubleBarrier_LeaveAfterAnotherClientDeletedTheNodeFailsWithErrNodeDeleted(t *testing.T) {
	c := server(t)
	path := testPath(t)
	obs := raw(t, c)
	mkdirs(t, obs, path)
	ctx := ctxT(t, time.Minute)
	lowest := path + "/0"
	_, err := obs.Create(lowest, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	m := zr.NewDoubleBarrier(connect(t, c, nil).Session, path, 2)
	require.NoError(t, m.Enter(ctx))
	for _, k := range children(t, obs, path) {
		if k != "0" && k != "ready" {
			require.NoError(t, obs.Delete(path+"/"+k, -1))
		}
	}
	require.ErrorIs(t, m.Leave(ctx), zr.ErrNodeDeleted)
	require.NoError(t, obs.Delete(lowest, -1))
	require.NoError(t, obs.Delete(path+"/ready", -1))
}
