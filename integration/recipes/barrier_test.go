package recipes_test

import (
	"bufio"
	"context"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/peers"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// barrierDone reports, without blocking, whether ch has delivered.
func barrierDone(ch <-chan error) bool { return len(ch) > 0 }

func TestBarrier_WaiterCutOffWhileRemovedIsReleasedWhenItReconnects(t *testing.T) {
	c := server(t)
	path := testPath(t) + "/b"
	proxy := zktest.NewProxy(t, c.Servers()[0])
	waiter := connect(t, c, []string{proxy.Addr()}, zr.WithSessionTimeout(6*time.Second))
	other := connect(t, c, nil)
	ctx := ctxT(t, time.Minute)
	require.NoError(t, zr.NewBarrier(other.Session, path).Set(ctx))

	st := watchStates(t, waiter.Session)
	got := make(chan error, 1)
	go func() { got <- zr.NewBarrier(waiter.Session, path).Wait(ctx) }()
	require.Never(t, func() bool { return barrierDone(got) }, 300*time.Millisecond, 10*time.Millisecond)

	proxy.Blackhole()
	require.Equal(t, zr.StateSuspended, st.next(t, 10*time.Second, zr.StateSuspended, zr.StateLost).State)
	require.NoError(t, zr.NewBarrier(other.Session, path).Remove(ctx))
	require.Never(t, func() bool { return barrierDone(got) }, 200*time.Millisecond, 10*time.Millisecond, "released without hearing of it")
	proxy.Heal()
	require.Equal(t, zr.StateReconnected, st.next(t, 10*time.Second, zr.StateReconnected, zr.StateLost).State)
	require.Eventually(t, func() bool { return barrierDone(got) }, 10*time.Second, 5*time.Millisecond,
		"a removal made while cut off releases the waiter once it is back")
	require.NoError(t, <-got)
}

func TestBarrier_WaiterWhoseSessionExpiresWaitsOnUnderTheNewSession(t *testing.T) {
	c := server(t)
	path := testPath(t)
	waiter := connect(t, c, nil)
	other := connect(t, c, nil)
	ctx := ctxT(t, time.Minute)
	require.NoError(t, zr.NewBarrier(other.Session, path).Set(ctx))

	st := watchStates(t, waiter.Session)
	got := make(chan error, 1)
	go func() { got <- zr.NewBarrier(waiter.Session, path).Wait(ctx) }()
	require.Never(t, func() bool { return barrierDone(got) }, 300*time.Millisecond, 10*time.Millisecond)
	waiter.expire(t)
	require.Equal(t, zr.StateLost, st.next(t, 15*time.Second, zr.StateLost).State)
	require.Equal(t, zr.StateReconnected, st.next(t, 15*time.Second, zr.StateReconnected).State)
	require.Never(t, func() bool { return barrierDone(got) }, 500*time.Millisecond, 10*time.Millisecond,
		"an expired session is no removal: the barrier is still set")

	require.NoError(t, zr.NewBarrier(other.Session, path).Remove(ctx))
	require.Eventually(t, func() bool { return barrierDone(got) }, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, <-got)
}

func TestDoubleBarrier_AMemberWhoseSessionExpiresStopsCounting(t *testing.T) {
	c := server(t)
	path := testPath(t)
	obs := raw(t, c)
	ctx := ctxT(t, time.Minute)
	a, b := connect(t, c, nil), connect(t, c, nil)
	ma, mb := zr.NewDoubleBarrier(a.Session, path, 2), zr.NewDoubleBarrier(b.Session, path, 2)

	// Waiting in Enter: the member's node goes with its session, and Enter
	// says so.
	got := make(chan error, 1)
	go func() { got <- ma.Enter(ctx) }()
	require.Eventually(t, func() bool { return len(children(t, obs, path)) == 1 }, 10*time.Second, 5*time.Millisecond)
	a.expire(t)
	require.Eventually(t, func() bool { return barrierDone(got) }, 15*time.Second, 5*time.Millisecond)
	err := <-got
	require.ErrorIs(t, err, zr.ErrSessionExpired)
	assert.Empty(t, children(t, obs, path), "no node left behind")

	// Between Enter and Leave: the others stop waiting for it in Leave,
	// and its own Leave waits for them.
	errs := make(chan error, 2)
	for _, m := range []*zr.DoubleBarrier{ma, mb} {
		go func() { errs <- m.Enter(ctx) }()
	}
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	st := watchStates(t, a.Session)
	a.expire(t)
	require.Equal(t, zr.StateReconnected, st.next(t, 15*time.Second, zr.StateReconnected).State)
	require.NoError(t, mb.Leave(ctx), "the expired member is no longer waited for")
	require.NoError(t, ma.Leave(ctx))
	assert.Empty(t, children(t, obs, path), "no node left behind, ready included")
}

// curatorBarrier is a running CuratorBarrierPeer (integration/peers/java).
type curatorBarrier struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	mu    sync.Mutex
	errs  strings.Builder
}

func (p *curatorBarrier) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.errs.Write(b)
}

// startCuratorBarrier runs the Curator barrier peer with args after its
// command's first word and the servers.
func startCuratorBarrier(t *testing.T, command string, args ...string) *curatorBarrier {
	t.Helper()
	peers.Require(t, peers.Curator)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cp, err := peers.BuildJava(ctx)
	require.NoError(t, err)
	argv := append([]string{"-XX:+UseSerialGC", "-Xmx256m", "-cp", cp, "zkrecipes.peers.CuratorBarrierPeer",
		command, server(t).ConnectString()}, args...)
	p := &curatorBarrier{cmd: exec.Command("java", argv...), lines: make(chan string, 16)}
	p.cmd.Stderr = p
	p.stdin, err = p.cmd.StdinPipe()
	require.NoError(t, err)
	out, err := p.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		if t.Failed() {
			p.mu.Lock()
			t.Logf("curator barrier peer %s: stderr:\n%s", command, p.errs.String())
			p.mu.Unlock()
		}
	})
	return p
}

// expect waits for the peer's next line and requires it to be want.
func (p *curatorBarrier) expect(t *testing.T, want string, d time.Duration) {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		require.True(t, ok, "curator peer exited before %s", want)
		require.Equal(t, want, l)
	case <-time.After(d):
		t.Fatalf("curator peer: no %s within %v", want, d)
	}
}

// said reports, without blocking, whether the peer printed a line.
func (p *curatorBarrier) said() bool { return len(p.lines) > 0 }

func TestBarrierInterop_GoWaiterReleasedByCuratorRemoveAndCuratorWaiterByGoRemove(t *testing.T) {
	c := server(t)
	path := testPath(t) + "/b"
	obs := raw(t, c)
	s := connect(t, c, nil)
	ctx := ctxT(t, 2*time.Minute)
	b := zr.NewBarrier(s.Session, path)

	// Curator sets, Go waits, Curator removes.
	startCuratorBarrier(t, "set", path).expect(t, "SET", time.Minute)
	_, st, err := obs.Get(path)
	require.NoError(t, err)
	assert.Zero(t, st.EphemeralOwner, "Curator's barrier node is persistent")
	set, err := b.IsSet(ctx)
	require.NoError(t, err)
	require.True(t, set)
	got := make(chan error, 1)
	go func() { got <- b.Wait(ctx) }()
	require.Never(t, func() bool { return barrierDone(got) }, 300*time.Millisecond, 10*time.Millisecond)
	startCuratorBarrier(t, "remove", path).expect(t, "REMOVED", time.Minute)
	require.Eventually(t, func() bool { return barrierDone(got) }, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, <-got)

	// Go sets, Curator waits, Go removes.
	require.NoError(t, b.Set(ctx))
	w := startCuratorBarrier(t, "wait", path)
	w.expect(t, "WAITING", time.Minute)
	require.Never(t, w.said, 500*time.Millisecond, 10*time.Millisecond, "Curator released while the barrier is set")
	require.NoError(t, b.Remove(ctx))
	w.expect(t, "RELEASED", 10*time.Second)
	_, _, err = obs.Get(path)
	require.ErrorIs(t, err, zk.ErrNoNode)
}

func TestDoubleBarrierInterop_GoAndCuratorMembersEnterAndLeaveTogether(t *testing.T) {
	const n = 4 // two Curator members, two Go members
	c := server(t)
	path := testPath(t)
	obs := raw(t, c)
	ctx := ctxT(t, 2*time.Minute)
	var gos []*zr.DoubleBarrier
	for range 2 {
		gos = append(gos, zr.NewDoubleBarrier(connect(t, c, nil).Session, path, n))
	}
	entered := make(chan error, 2)
	anyIn := func() bool { return barrierDone(entered) }

	cur1 := startCuratorBarrier(t, "double", path, "4")
	cur1.expect(t, "ENTERING", time.Minute)
	require.Eventually(t, func() bool { return len(children(t, obs, path)) == 1 }, 10*time.Second, 5*time.Millisecond)
	go func() { entered <- gos[0].Enter(ctx) }()
	require.Eventually(t, func() bool { return len(children(t, obs, path)) == 2 }, 10*time.Second, 5*time.Millisecond)
	cur2 := startCuratorBarrier(t, "double", path, "4")
	cur2.expect(t, "ENTERING", time.Minute)
	require.Eventually(t, func() bool { return len(children(t, obs, path)) == 3 }, 10*time.Second, 5*time.Millisecond)
	require.Never(t, func() bool { return anyIn() || cur1.said() || cur2.said() }, 500*time.Millisecond, 10*time.Millisecond,
		"a member passed Enter with 3 of 4 in")
	for _, k := range children(t, obs, path) {
		assert.Len(t, k, 36, "members are P/<uuid>")
		_, st, err := obs.Get(path + "/" + k)
		require.NoError(t, err)
		assert.NotZero(t, st.EphemeralOwner, "members are ephemeral")
	}

	go func() { entered <- gos[1].Enter(ctx) }()
	cur1.expect(t, "ENTERED", 10*time.Second)
	cur2.expect(t, "ENTERED", 10*time.Second)
	require.NoError(t, <-entered)
	require.NoError(t, <-entered)
	assert.Contains(t, children(t, obs, path), "ready")

	// Leave: nobody passes until the last member leaves.
	left := make(chan error, 2)
	go func() { left <- gos[0].Leave(ctx) }()
	_, err := io.WriteString(cur1.stdin, "leave\n")
	require.NoError(t, err)
	_, err = io.WriteString(cur2.stdin, "leave\n")
	require.NoError(t, err)
	require.Never(t, func() bool { return barrierDone(left) || cur1.said() || cur2.said() }, 500*time.Millisecond, 10*time.Millisecond,
		"a member passed Leave with one still in")
	go func() { left <- gos[1].Leave(ctx) }()
	cur1.expect(t, "LEFT", 10*time.Second)
	cur2.expect(t, "LEFT", 10*time.Second)
	require.NoError(t, <-left)
	require.NoError(t, <-left)
	assert.Empty(t, children(t, obs, path), "no node left behind, ready included")
}

func TestDoubleBarrier_EnterWaitsThroughALostConnection(t *testing.T) {
	c := server(t)
	path := testPath(t)
	obs := raw(t, c)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	cut := connect(t, c, []string{proxy.Addr()}, zr.WithSessionTimeout(6*time.Second))
	other := connect(t, c, nil)
	ctx := ctxT(t, time.Minute)

	st := watchStates(t, cut.Session)
	got := make(chan error, 1)
	go func() { got <- zr.NewDoubleBarrier(cut.Session, path, 2).Enter(ctx) }()
	require.Eventually(t, func() bool { return len(children(t, obs, path)) == 1 }, 10*time.Second, 5*time.Millisecond)
	proxy.Blackhole()
	require.Equal(t, zr.StateSuspended, st.next(t, 10*time.Second, zr.StateSuspended, zr.StateLost).State)
	require.NoError(t, zr.NewDoubleBarrier(other.Session, path, 2).Enter(ctx), "the cut-off member still counts")
	require.Never(t, func() bool { return barrierDone(got) }, 200*time.Millisecond, 10*time.Millisecond)
	proxy.Heal()
	require.Equal(t, zr.StateReconnected, st.next(t, 10*time.Second, zr.StateReconnected, zr.StateLost).State)
	require.Eventually(t, func() bool { return barrierDone(got) }, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, <-got, "a lost connection is no reason to fail Enter (Curator 5.4 throws)")
}
