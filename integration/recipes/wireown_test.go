package recipes_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/wire"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// The wire layer's own requests (internal/wire/own.go) share
// go-zookeeper's connection. These tests drive a plain go-zookeeper client
// over the layer, through a fault proxy, against the real server.

// zkLog counts go-zookeeper's complaints about replies it cannot place.
type zkLog struct{ unknown atomic.Int64 }

func (l *zkLog) Printf(format string, args ...any) {
	m := fmt.Sprintf(format, args...)
	if strings.Contains(m, "unknown request") || strings.Contains(m, "Xid < 0") {
		l.unknown.Add(1)
	}
}

// ownWrites wraps the connections beneath the layer and tells, on
// written, each own request frame written (a negative xid other than
// go-zookeeper's ping, auth and SetWatches xids).
type ownWrites struct{ written chan int32 }

func (o *ownWrites) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	return &ownWriteConn{Conn: c, o: o}, nil
}

type ownWriteConn struct {
	net.Conn
	o *ownWrites
}

func (c *ownWriteConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	for b := p; len(b) >= 12; {
		size := 4 + int(binary.BigEndian.Uint32(b[0:4]))
		if xid := int32(binary.BigEndian.Uint32(b[4:8])); xid < -8 {
			select {
			case c.o.written <- xid:
			default:
			}
		}
		if size > len(b) || size < 12 {
			break
		}
		b = b[size:]
	}
	return n, err
}

// layered connects a go-zookeeper client to addr over a wire layer.
func layered(t *testing.T, addr string, dial wire.DialFunc) (*zk.Conn, *wire.Layer, *zkLog) {
	t.Helper()
	l := wire.New()
	log := &zkLog{}
	if dial == nil {
		dial = net.DialTimeout
	}
	conn, _, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithDialer(zk.Dialer(l.Dialer(dial))),
		zk.WithLogger(log), zk.WithLogInfo(false))
	require.NoError(t, err)
	t.Cleanup(conn.Close)
	require.Eventually(t, func() bool { return conn.State() == zk.StateHasSession }, 10*time.Second, 5*time.Millisecond)
	return conn, l, log
}

// existsBody is an ExistsRequest: path, watch false.
func existsBody(path string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(path)))
	return append(append(b, path...), 0)
}

func TestOwnRequestsInterleavedWithGoZookeepersUnderLoadAndReconnectsLeaveItsRepliesUntouched(t *testing.T) {
	c := server(t)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	var dials atomic.Int64
	conn, l, log := layered(t, proxy.Addr(), func(network, address string, timeout time.Duration) (net.Conn, error) {
		dials.Add(1)
		return net.DialTimeout(network, address, timeout)
	})
	other := raw(t, c)
	p := testPath(t)
	freshPath(t, other, p)
	mkdirs(t, other, p)

	const writers, owners = 4, 2
	czxid := make([]int64, writers)
	for i := range writers {
		_, err := other.Create(fmt.Sprintf("%s/n%d", p, i), []byte("0"), 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
		_, st, err := other.Get(fmt.Sprintf("%s/n%d", p, i))
		require.NoError(t, err)
		czxid[i] = st.Czxid
	}

	ctx, cancel := context.WithCancel(context.Background())
	var (
		wg                sync.WaitGroup
		zkOK, ownOK, lost atomic.Int64
		mu                sync.Mutex
		wrong             []string
	)
	defer func() { cancel(); wg.Wait() }() // a failed check ends the clients before the cleanups
	bad := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		wrong = append(wrong, fmt.Sprintf(format, args...))
	}
	for i := range writers {
		wg.Add(1)
		go func() { // go-zookeeper: write a counter, read it back
			defer wg.Done()
			node := fmt.Sprintf("%s/n%d", p, i)
			for n := 1; ctx.Err() == nil; n++ {
				want := strconv.Itoa(n)
				if _, err := conn.Set(node, []byte(want), -1); err != nil {
					if !goZookeeperLostConnection(err) {
						bad("set %s: %v", node, err)
					}
					lost.Add(1)
					time.Sleep(time.Millisecond) // no spinning while the connection is down
					continue
				}
				data, st, err := conn.Get(node)
				switch {
				case goZookeeperLostConnection(err):
					lost.Add(1)
					time.Sleep(time.Millisecond)
				case err != nil:
					bad("get %s: %v", node, err)
				case string(data) != want || st.Czxid != czxid[i]:
					bad("get %s: %q (czxid %d), want %q (czxid %d)", node, data, st.Czxid, want, czxid[i])
				default:
					zkOK.Add(1)
				}
			}
		}()
	}
	for j := range owners {
		wg.Add(1)
		go func() { // own requests: exists on the same nodes
			defer wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				i := (n + j) % writers
				node := fmt.Sprintf("%s/n%d", p, i)
				cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
				r, err := l.Call(cctx, 3, existsBody(node))
				ccancel()
				switch {
				case errors.Is(err, wire.ErrConnLost):
					lost.Add(1)
					time.Sleep(time.Millisecond)
				case ctx.Err() != nil:
				case err != nil:
					bad("own exists %s: %v", node, err)
				case r.Code != 0 || len(r.Body) < 8 || int64(binary.BigEndian.Uint64(r.Body[0:8])) != czxid[i]:
					bad("own exists %s: code %d, body %x", node, r.Code, r.Body)
				default:
					ownOK.Add(1)
				}
			}
		}()
	}
	progress := func(n int64) {
		z, o := zkOK.Load(), ownOK.Load()
		require.Eventually(t, func() bool { return zkOK.Load() >= z+n && ownOK.Load() >= o+n },
			15*time.Second, time.Millisecond, "both kinds of requests go on")
	}
	progress(200)
	sid := conn.SessionID()
	for range 3 {
		proxy.ResetAll()
		progress(100)
	}
	cancel()
	wg.Wait()
	assert.Empty(t, wrong)
	assert.Zero(t, log.unknown.Load(), "go-zookeeper read no reply it could not place")
	assert.Equal(t, sid, conn.SessionID(), "one session throughout")
	assert.GreaterOrEqual(t, dials.Load(), int64(4), "the connection was dropped and made again")
	t.Logf("go-zookeeper requests %d, own requests %d, failed with the connection %d", zkOK.Load(), ownOK.Load(), lost.Load())
}

func TestOwnRequestInFlightWhenTheConnectionDropsFailsWithConnectionLoss(t *testing.T) {
	c := server(t)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	writes := &ownWrites{written: make(chan int32, 1)}
	conn, l, _ := layered(t, proxy.Addr(), writes.dial)

	proxy.Blackhole() // the request goes out and no reply comes back
	done := make(chan error, 1)
	go func() {
		_, err := l.Call(context.Background(), 3, existsBody("/"))
		done <- err
	}()
	select {
	case <-writes.written:
	case <-time.After(10 * time.Second):
		t.Fatal("the own request was not written")
	}
	start := time.Now()
	proxy.ResetAll()
	select {
	case err := <-done:
		require.ErrorIs(t, err, wire.ErrConnLost)
		t.Logf("failed %v after the drop", time.Since(start))
	case <-time.After(10 * time.Second):
		t.Fatal("the own request still waits after its connection dropped")
	}
	proxy.Heal()
	require.Eventually(t, func() bool { _, _, err := conn.Get("/"); return err == nil }, 15*time.Second, 10*time.Millisecond)
}

// A server answers an opcode it does not know (what a 3.5 server makes of
// addWatch) with UNIMPLEMENTED and closes the connection; the session
// goes on over the next one.
func TestOwnRequestOfAnUnknownOpcodeIsAnsweredUnimplementedAndTheSessionGoesOn(t *testing.T) {
	c := server(t)
	conn, l, log := layered(t, c.Servers()[0], nil)
	sid := conn.SessionID()
	r, err := l.Call(ctxT(t, 10*time.Second), 999, nil)
	require.NoError(t, err)
	assert.Equal(t, int32(wire.CodeUnimplemented), r.Code)
	require.Eventually(t, func() bool { _, _, err := conn.Get("/"); return err == nil }, 15*time.Second, 10*time.Millisecond)
	assert.Equal(t, sid, conn.SessionID())
	assert.Zero(t, log.unknown.Load())
}

// goZookeeperLostConnection tells a go-zookeeper request that failed with
// its connection: go-zookeeper v1.0.4 fails the requests in flight with its
// own errors, or with the write's own error when the proxy resets the
// connection under a write (connection reset, broken pipe).
func goZookeeperLostConnection(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed)
}
