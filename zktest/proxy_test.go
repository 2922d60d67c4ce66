package zktest_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/zktest"
	"github.com/zkrecipes/zkrecipes/zktest/internal/testclient"
)

// echoServer echoes every connection on 127.0.0.1 until the test ends.
func echoServer(t *testing.T) string {
	addr, _ := recordingEcho(t)
	return addr
}

// dial connects to p and closes the connection when the test ends.
func dial(t *testing.T, p *zktest.Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// roundTrip writes msg to c and requires it back, whole, from the echo server.
func roundTrip(t *testing.T, c net.Conn, msg []byte) {
	t.Helper()
	_, err := c.Write(msg)
	require.NoError(t, err)
	buf := make([]byte, len(msg))
	_, err = io.ReadFull(c, buf)
	require.NoError(t, err)
	require.Equal(t, msg, buf)
}

func TestProxy_BlackholeDelayResetWithoutLeaks(t *testing.T) {
	t.Run("faults", func(t *testing.T) {
		p := zktest.NewProxy(t, echoServer(t))
		c := dial(t, p)
		roundTrip(t, c, []byte("ping"))
		require.Equal(t, 1, p.Conns())

		p.SetDelay(100 * time.Millisecond)
		t0 := time.Now()
		roundTrip(t, c, []byte("slow"))
		require.GreaterOrEqual(t, time.Since(t0), 200*time.Millisecond, "two hops of 100ms each")
		p.SetDelay(0)

		// Blackholed: the write is accepted, nothing comes back, the socket stays open.
		p.Blackhole()
		_, err := c.Write([]byte("held"))
		require.NoError(t, err)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
		_, err = c.Read(make([]byte, 4))
		var ne net.Error
		require.True(t, errors.As(err, &ne) && ne.Timeout(), "want silence, got %v", err)
		require.NoError(t, c.SetReadDeadline(time.Time{}))
		p.Heal()
		buf := make([]byte, 4)
		_, err = io.ReadFull(c, buf)
		require.NoError(t, err)
		require.Equal(t, "held", string(buf), "held bytes delivered after Heal")

		p.ResetAll()
		_, err = c.Read(buf)
		require.True(t, errors.Is(err, syscall.ECONNRESET), "want a reset, got %v", err)
		require.Eventually(t, func() bool { return p.Conns() == 0 }, 5*time.Second, 10*time.Millisecond)
	})
	goleak.VerifyNone(t)
}

func TestProxy_BlackholedClientLosesConnectionAndHealKeepsSession(t *testing.T) {
	// Long enough that the client reconnects after Heal before the server expires it.
	conn := sameSessionAfterFault(t, 10*time.Second, 15*time.Second, (*zktest.Proxy).Blackhole, (*zktest.Proxy).Heal)
	_, err := conn.Create("/after-heal", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
}

func TestProxy_ResetAllForcesReconnectWithSameSession(t *testing.T) {
	sameSessionAfterFault(t, 4*time.Second, 10*time.Second, (*zktest.Proxy).ResetAll, nil)
}

// sameSessionAfterFault starts a server and a client session (of sessionTimeout) through a
// proxy to it, applies fault to the proxy, waits (within each time) until the client is
// disconnected, applies heal (when not nil), waits until the client has its session
// again, and requires it to be the same session. It returns the client.
func sameSessionAfterFault(t *testing.T, sessionTimeout, within time.Duration, fault, heal func(*zktest.Proxy)) *zk.Conn {
	t.Helper()
	c := zktest.Start(t)
	p := zktest.NewProxy(t, c.Servers()[0])
	conn, ev := testclient.Connect(t, []string{p.Addr()}, sessionTimeout, nil)
	sid := conn.SessionID()

	n := ev.Len()
	fault(p)
	ev.WaitState(t, n, zk.StateDisconnected, within)
	if heal != nil {
		heal(p)
	}
	ev.WaitState(t, n, zk.StateHasSession, within)
	require.Equal(t, sid, conn.SessionID())
	return conn
}

// A proxy started on the port of one that was closed reaches its own
// target: a server that came back at the same address, another server.
func TestProxyAt_AProxyOnAClosedProxysPortReachesItsOwnTarget(t *testing.T) {
	a := zktest.NewProxy(t, echoServer(t))
	roundTrip(t, dial(t, a), []byte("to a"))
	require.NoError(t, a.Close())
	b := zktest.NewProxyAt(t, a.Addr(), echoServer(t))
	require.Equal(t, a.Addr(), b.Addr())
	roundTrip(t, dial(t, b), []byte("to b"))
	require.Equal(t, 1, b.Conns())
}

func TestLoopbackOnly_NonLoopbackAddressesAreRefused(t *testing.T) {
	_, err := zktest.ListenProxy("10.0.0.1:2181")
	require.ErrorIs(t, err, zktest.ErrNotLoopback)
	for _, listen := range []string{"0.0.0.0:0", ":0", "10.0.0.1:0", "[::1]:0", "127.0.0.2:0", "localhost:0"} {
		_, err = zktest.ListenProxyAt(listen, "127.0.0.1:2181")
		require.ErrorIs(t, err, zktest.ErrNotLoopback, listen)
	}
	_, err = zktest.FourLetterWord(context.Background(), "192.168.1.1:2181", "ruok")
	require.ErrorIs(t, err, zktest.ErrNotLoopback)
	err = zktest.ExpireSession(context.Background(), "[::1]:2181", 1, nil)
	require.ErrorIs(t, err, zktest.ErrNotLoopback)
	var capture zktest.SessionCapture
	_, err = capture.Dialer()("tcp", "example.com:2181", time.Second)
	require.ErrorIs(t, err, zktest.ErrNotLoopback)

	t.Setenv("ZK_SERVERS", "127.0.0.1:2181,10.1.2.3:2181")
	_, err = zktest.StartCluster(context.Background(), zktest.WithBackend(zktest.BackendServers))
	require.ErrorIs(t, err, zktest.ErrNotLoopback)
}

func TestServersBackend_AttachesAndRefusesLifecycle(t *testing.T) {
	owned := zktest.Start(t, zktest.WithBackend(zktest.BackendJava))
	t.Setenv("ZK_SERVERS", owned.ConnectString())
	c := zktest.Start(t, zktest.WithBackend(zktest.BackendServers))
	require.Equal(t, zktest.BackendServers, c.Backend())
	require.Equal(t, owned.Servers(), c.Servers())
	require.ErrorIs(t, c.Kill(0), zktest.ErrUnsupported)
	require.ErrorIs(t, c.Restart(0), zktest.ErrUnsupported)
	require.ErrorIs(t, c.Stop(0), zktest.ErrUnsupported)
	conn, _ := testclient.Connect(t, c.Servers(), 4*time.Second, nil)
	_, err := conn.Create("/attached", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
}

// recordingEcho is an echo server on 127.0.0.1 that also hands every chunk it
// receives to got, so that a test can see requests reach the server.
func recordingEcho(t *testing.T) (addr string, got <-chan []byte) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ch := make(chan []byte, 64)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						select {
						case ch <- append([]byte(nil), buf[:n]...):
						default:
						}
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String(), ch
}

// frame returns body as a ZooKeeper frame: its 4-byte big-endian length, then body.
func frame(body string) []byte {
	n := len(body)
	return append([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}, body...)
}

// readUntilError reads c until an error and returns what came and the error.
func readUntilError(t *testing.T, c net.Conn, within time.Duration) ([]byte, error) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(within)))
	var got []byte
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			return got, err
		}
	}
}

func closedWithin(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

func TestProxy_LoseRepliesPassesRequestsWithholdsRepliesThenResets(t *testing.T) {
	t.Run("fault", func(t *testing.T) {
		addr, got := recordingEcho(t)
		p := zktest.NewProxy(t, addr)
		c := dial(t, p)
		roundTrip(t, c, frame("before"))
		<-got

		const hold = 300 * time.Millisecond
		t0 := time.Now()
		done := p.LoseReplies(hold)
		_, err := c.Write(frame("lost"))
		require.NoError(t, err)
		select {
		case b := <-got:
			require.Equal(t, frame("lost"), b, "the request reaches the server")
		case <-time.After(5 * time.Second):
			t.Fatal("the request never reached the server")
		}
		b, err := readUntilError(t, c, 5*time.Second)
		require.Empty(t, b, "no byte of the reply is delivered")
		require.True(t, errors.Is(err, syscall.ECONNRESET), "want a reset, got %v", err)
		require.GreaterOrEqual(t, time.Since(t0), hold, "reset only after the hold")
		require.True(t, closedWithin(done, 5*time.Second), "the loss's channel closes once its connection ended")
		require.Eventually(t, func() bool { return p.Conns() == 0 }, 5*time.Second, 10*time.Millisecond)

		// New connections are not affected.
		c2 := dial(t, p)
		roundTrip(t, c2, frame("after"))
		require.True(t, closedWithin(p.LoseReplies(0), 5*time.Second), "a zero hold resets at once")
		_, err = c2.Read(make([]byte, 1))
		require.True(t, errors.Is(err, syscall.ECONNRESET), "want a reset, got %v", err)
	})
	goleak.VerifyNone(t)
}

func TestProxy_LoseRepliesAfterCountsZooKeeperFrames(t *testing.T) {
	t.Run("fault", func(t *testing.T) {
		p := zktest.NewProxy(t, echoServer(t))
		c := dial(t, p)
		first, second, third := frame("first"), frame(""), frame("third")

		// The first frame's length arrives alone, before the call: the frame
		// cut by the call counts as one of the two to pass.
		roundTrip(t, c, first[:3])
		done := p.LoseRepliesAfter(2, 100*time.Millisecond)

		rest := append(append(append([]byte(nil), first[3:]...), second...), third...)
		_, err := c.Write(rest)
		require.NoError(t, err)
		b, err := readUntilError(t, c, 5*time.Second)
		require.True(t, errors.Is(err, syscall.ECONNRESET), "want a reset, got %v", err)
		want := append(append([]byte(nil), first[3:]...), second...)
		require.Equal(t, want, b, "exactly the rest of the first frame and the (empty) second one pass")
		require.True(t, closedWithin(done, 5*time.Second))
	})
	goleak.VerifyNone(t)
}

func TestProxy_LoseRepliesOnNextConnHitsOnlyTheNextConnection(t *testing.T) {
	t.Run("fault", func(t *testing.T) {
		p := zktest.NewProxy(t, echoServer(t))
		live := dial(t, p)
		roundTrip(t, live, frame("live"))

		done := p.LoseRepliesOnNextConn(1, 50*time.Millisecond)
		roundTrip(t, live, frame("still live"))
		next := dial(t, p)
		roundTrip(t, next, frame("handshake")) // the first reply passes
		_, err := next.Write(frame("request"))
		require.NoError(t, err)
		b, err := readUntilError(t, next, 5*time.Second)
		require.Empty(t, b)
		require.True(t, errors.Is(err, syscall.ECONNRESET), "want a reset, got %v", err)
		require.True(t, closedWithin(done, 5*time.Second))

		roundTrip(t, live, frame("live after"))
		after := dial(t, p)
		roundTrip(t, after, frame("one"))
		roundTrip(t, after, frame("two")) // armed once: the connection after is spared

		// Disarm cancels an arming no connection took.
		disarmed := p.LoseRepliesOnNextConn(0, time.Second)
		require.Equal(t, 1, p.Disarm())
		require.True(t, closedWithin(disarmed, time.Second))
		roundTrip(t, dial(t, p), frame("spared"))

		// An arming no connection took ends with the proxy.
		unused := p.LoseRepliesOnNextConn(0, time.Second)
		require.NoError(t, p.Close())
		require.True(t, closedWithin(unused, time.Second))
		require.True(t, closedWithin(p.LoseReplies(time.Second), time.Second), "a closed proxy has nothing to hit")
	})
	goleak.VerifyNone(t)
}

func TestProxy_LostCreateReplyStillCreatesTheNodeAndTheSessionSurvives(t *testing.T) {
	c := zktest.Start(t)
	obs := c.Observer(t)
	p := zktest.NewProxy(t, c.Servers()[0])
	// The proxy twice: go-zookeeper pauses a second before it tries the first
	// server of its list again, and flushes the requests queued meanwhile.
	conn, ev := testclient.Connect(t, []string{p.Addr(), p.Addr()}, 8*time.Second, nil)
	sid := conn.SessionID()
	acl := zk.WorldACL(zk.PermAll)

	n := ev.Len()
	done := p.LoseReplies(300 * time.Millisecond)
	_, err := conn.Create("/lost-reply", nil, zk.FlagEphemeral, acl)
	require.ErrorIs(t, err, zk.ErrConnectionClosed, "the reply is lost with the connection")
	require.True(t, closedWithin(done, 5*time.Second))
	ev.WaitState(t, n, zk.StateHasSession, 10*time.Second)
	require.Equal(t, sid, conn.SessionID(), "the session survives the reset")
	ok, st, err := obs.Exists("/lost-reply")
	require.NoError(t, err)
	require.True(t, ok, "the create reached the server")
	require.Equal(t, sid, st.EphemeralOwner)

	// The requests sent right after the reconnection lose their replies too.
	n = ev.Len()
	next := p.LoseRepliesOnNextConn(1, 300*time.Millisecond)
	p.LoseReplies(300 * time.Millisecond)
	_, err = conn.Create("/lost-reply-2", nil, zk.FlagEphemeral, acl)
	require.ErrorIs(t, err, zk.ErrConnectionClosed)
	_, err = conn.Create("/lost-reply-3", nil, zk.FlagEphemeral, acl)
	require.ErrorIs(t, err, zk.ErrConnectionClosed, "sent on the next connection, whose replies are lost too")
	require.True(t, closedWithin(next, 5*time.Second))
	ok, _, err = conn.Exists("/lost-reply-3")
	require.NoError(t, err)
	require.True(t, ok, "both creates reached the server")
	ok, _, err = conn.Exists("/lost-reply-2")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, sid, conn.SessionID())
	require.GreaterOrEqual(t, countState(ev.Since(n), zk.StateHasSession), 2, "two reconnections")
}

func countState(states []zk.State, s zk.State) int {
	n := 0
	for _, x := range states {
		if x == s {
			n++
		}
	}
	return n
}

// replyFrame returns a ZooKeeper reply frame: the header (xid, zxid, err)
// then body.
func replyFrame(xid int32, body string) []byte {
	h := make([]byte, 16, 16+len(body))
	binary.BigEndian.PutUint32(h, uint32(xid))
	binary.BigEndian.PutUint64(h[4:], 7)
	return frame(string(append(h, body...)))
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func TestProxy_LoseRequestReplyCountsOnlyRepliesToRequests(t *testing.T) {
	t.Run("fault", func(t *testing.T) {
		p := zktest.NewProxy(t, echoServer(t))
		c := dial(t, p)
		// The connect response has no header: even if its first bytes look like
		// a positive xid, it does not count.
		connectResp := frame("\x00\x00\x00\x01 connect response")
		roundTrip(t, c, cat(connectResp, replyFrame(-2, ""), replyFrame(-1, "event"), replyFrame(1, "one")))
		require.Equal(t, 1, p.RequestReplies())

		f := p.LoseRequestReply(2, 100*time.Millisecond)
		passed := cat(replyFrame(-2, ""), replyFrame(2, "two"), replyFrame(-1, "event"))
		lost := replyFrame(3, "three")
		// The lost reply's xid arrives cut in two: its first bytes must not pass.
		_, err := c.Write(cat(passed, lost[:6]))
		require.NoError(t, err)
		buf := make([]byte, len(passed))
		_, err = io.ReadFull(c, buf)
		require.NoError(t, err)
		require.Equal(t, passed, buf)
		select {
		case <-f.Hit():
			t.Fatal("hit before the reply's xid arrived")
		default:
		}
		_, err = c.Write(cat(lost[6:], replyFrame(-2, ""), replyFrame(4, "four")))
		require.NoError(t, err)
		b, err := readUntilError(t, c, 5*time.Second)
		require.True(t, errors.Is(err, syscall.ECONNRESET), "want a reset, got %v", err)
		require.Empty(t, b, "nothing from the lost reply on")
		require.True(t, closedWithin(f.Hit(), time.Second))
		require.Equal(t, int32(3), f.Xid())
		require.Equal(t, 2, p.RequestReplies())
	})
	goleak.VerifyNone(t)
}

func TestProxy_HoldRequestReplyDeliversInOrderOnRelease(t *testing.T) {
	t.Run("fault", func(t *testing.T) {
		p := zktest.NewProxy(t, echoServer(t))
		c := dial(t, p)
		roundTrip(t, c, frame("connect response"))

		f := p.HoldRequestReply(1)
		before := replyFrame(-1, "event")
		held := cat(replyFrame(9, "held"), replyFrame(-2, ""), replyFrame(10, "after"))
		_, err := c.Write(cat(before, held))
		require.NoError(t, err)
		buf := make([]byte, len(before))
		_, err = io.ReadFull(c, buf)
		require.NoError(t, err)
		require.Equal(t, before, buf)
		require.True(t, closedWithin(f.Hit(), 5*time.Second))
		require.Equal(t, int32(9), f.Xid())
		b, err := readUntilError(t, c, 200*time.Millisecond)
		var ne net.Error
		require.True(t, errors.As(err, &ne) && ne.Timeout(), "want silence while held, got %v", err)
		require.Empty(t, b)
		require.NoError(t, c.SetReadDeadline(time.Time{}))

		f.Release()
		buf = make([]byte, len(held))
		_, err = io.ReadFull(c, buf)
		require.NoError(t, err)
		require.Equal(t, held, buf, "the held reply and what followed, in order")
		f.Release() // idempotent
		roundTrip(t, c, replyFrame(11, "flows again"))
		require.Equal(t, 3, p.RequestReplies())

		// A fault released before its reply came is cancelled.
		g := p.HoldRequestReply(1)
		g.Release()
		roundTrip(t, c, replyFrame(12, "not held"))
		require.False(t, closedWithin(g.Hit(), 50*time.Millisecond))

		// Hold a reply, set a loss of the next one, release: the held reply
		// passes and the loss counts from the reply after it.
		h := p.HoldRequestReply(1)
		_, err = c.Write(replyFrame(13, "held again"))
		require.NoError(t, err)
		require.True(t, closedWithin(h.Hit(), 5*time.Second))
		l := p.LoseRequestReply(1, 50*time.Millisecond)
		h.Release()
		buf = make([]byte, len(replyFrame(13, "held again")))
		_, err = io.ReadFull(c, buf)
		require.NoError(t, err)
		require.Equal(t, replyFrame(13, "held again"), buf)
		_, err = c.Write(cat(replyFrame(-2, ""), replyFrame(14, "lost")))
		require.NoError(t, err)
		b, err = readUntilError(t, c, 5*time.Second)
		require.True(t, errors.Is(err, syscall.ECONNRESET), "want a reset, got %v", err)
		require.Equal(t, replyFrame(-2, ""), b, "the ping passes, the next reply is lost")
		require.Equal(t, int32(14), l.Xid())
	})
	goleak.VerifyNone(t)
}

func TestProxy_RewriteRepliesRewritesWholeFramesOfNewConnections(t *testing.T) {
	t.Run("fault", func(t *testing.T) {
		p := zktest.NewProxy(t, echoServer(t))
		live := dial(t, p)
		roundTrip(t, live, frame("live"))
		require.Panics(t, func() { p.RewriteReplies([]byte("ab"), []byte("abc")) })

		p.RewriteReplies([]byte("charset=utf-8"), []byte("charsex=utf-8"))
		roundTrip(t, live, frame("charset=utf-8: live connections are not affected"))
		require.NoError(t, live.Close())
		require.Eventually(t, func() bool { return p.Conns() == 0 }, 5*time.Second, 10*time.Millisecond)

		c := dial(t, p)
		// A match split across two segments, and a frame held back until whole.
		msg := frame("realm, charset=utf-8, algorithm")
		cut := len(msg) - len("=utf-8, algorithm")
		_, err := c.Write(msg[:cut])
		require.NoError(t, err)
		b, err := readUntilError(t, c, 200*time.Millisecond)
		var ne net.Error
		require.True(t, errors.As(err, &ne) && ne.Timeout(), "want silence until the frame is whole, got %v", err)
		require.Empty(t, b)
		require.NoError(t, c.SetReadDeadline(time.Time{}))
		_, err = c.Write(msg[cut:])
		require.NoError(t, err)
		buf := make([]byte, len(msg))
		_, err = io.ReadFull(c, buf)
		require.NoError(t, err)
		require.Equal(t, frame("realm, charsex=utf-8, algorithm"), buf)

		// Every match of every frame in one segment; the other faults count
		// the rewritten frames.
		done := p.LoseRepliesAfter(2, 50*time.Millisecond)
		_, err = c.Write(cat(frame("charset=utf-8 charset=utf-8"), frame("none"), frame("charset=utf-8 lost")))
		require.NoError(t, err)
		b, err = readUntilError(t, c, 5*time.Second)
		require.True(t, errors.Is(err, syscall.ECONNRESET), "want a reset, got %v", err)
		require.Equal(t, cat(frame("charsex=utf-8 charsex=utf-8"), frame("none")), b)
		require.True(t, closedWithin(done, 5*time.Second))

		p.RewriteReplies(nil, nil)
		roundTrip(t, dial(t, p), frame("charset=utf-8: the rewriting stopped"))
	})
	goleak.VerifyNone(t)
}
