package zktest_test

import (
	"context"
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

	"github.com/zkrecipes/zkrecipes/integration/zktest"
)

// echoServer echoes every connection on 127.0.0.1 until the test ends.
func echoServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
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
				_, _ = io.Copy(c, c)
				_ = c.Close()
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
	return ln.Addr().String()
}

func TestProxy_BlackholeDelayResetWithoutLeaks(t *testing.T) {
	t.Run("faults", func(t *testing.T) {
		p := zktest.NewProxy(t, echoServer(t))
		c, err := net.Dial("tcp", p.Addr())
		require.NoError(t, err)
		defer c.Close()
		roundTrip := func(msg string) {
			t.Helper()
			_, err := c.Write([]byte(msg))
			require.NoError(t, err)
			buf := make([]byte, len(msg))
			_, err = io.ReadFull(c, buf)
			require.NoError(t, err)
			require.Equal(t, msg, string(buf))
		}
		roundTrip("ping")
		require.Equal(t, 1, p.Conns())

		p.SetDelay(100 * time.Millisecond)
		t0 := time.Now()
		roundTrip("slow")
		require.GreaterOrEqual(t, time.Since(t0), 200*time.Millisecond, "two hops of 100ms each")
		p.SetDelay(0)

		// Blackholed: the write is accepted, nothing comes back, the socket stays open.
		p.Blackhole()
		_, err = c.Write([]byte("held"))
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
	c := zktest.Start(t)
	p := zktest.NewProxy(t, c.Servers()[0])
	// Long enough that the client reconnects after Heal before the server expires it.
	conn, ev := connect(t, []string{p.Addr()}, 10*time.Second, nil)
	sid := conn.SessionID()

	n := ev.len()
	p.Blackhole()
	ev.waitState(t, n, zk.StateDisconnected, 15*time.Second)
	p.Heal()
	ev.waitState(t, n, zk.StateHasSession, 15*time.Second)
	require.Equal(t, sid, conn.SessionID())
	_, err := conn.Create("/after-heal", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
}

func TestProxy_ResetAllForcesReconnectWithSameSession(t *testing.T) {
	c := zktest.Start(t)
	p := zktest.NewProxy(t, c.Servers()[0])
	conn, ev := connect(t, []string{p.Addr()}, 4*time.Second, nil)
	sid := conn.SessionID()
	n := ev.len()
	p.ResetAll()
	ev.waitState(t, n, zk.StateDisconnected, 10*time.Second)
	ev.waitState(t, n, zk.StateHasSession, 10*time.Second)
	require.Equal(t, sid, conn.SessionID())
}

func TestLoopbackOnly_NonLoopbackAddressesAreRefused(t *testing.T) {
	_, err := zktest.ListenProxy("10.0.0.1:2181")
	require.ErrorIs(t, err, zktest.ErrNotLoopback)
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
	conn, _ := connect(t, c.Servers(), 4*time.Second, nil)
	_, err := conn.Create("/attached", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
}
