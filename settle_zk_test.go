package zkrecipes

import (
	"context"
	"encoding/binary"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const opSync = 9 // opMulti: writes_test.go

// requestDropper shuts a Session's connection instead of writing the next
// requests of given opcodes: the server never sees them, the client gets
// no reply, and go-zookeeper reconnects under the same session.
type requestDropper struct {
	mu    sync.Mutex
	drop  map[uint32]int // opcode → how many more to drop
	dials int
}

func (d *requestDropper) dropNext(op uint32, n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.drop == nil {
		d.drop = map[uint32]int{}
	}
	d.drop[op] += n
}

// takes reports whether the frame p must be dropped, and counts it.
func (d *requestDropper) takes(p []byte) bool {
	if len(p) < 12 {
		return false
	}
	op := binary.BigEndian.Uint32(p[8:12])
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.drop[op] > 0 {
		d.drop[op]--
		return true
	}
	return false
}

// left returns how many requests of opcode op are still to be dropped.
func (d *requestDropper) left(op uint32) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.drop[op]
}

// dialled returns how many connections the Session has begun to dial.
func (d *requestDropper) dialled() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dials
}

func (d *requestDropper) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	d.mu.Lock()
	d.dials++
	d.mu.Unlock()
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	return &droppingConn{Conn: c, d: d}, nil
}

type droppingConn struct {
	net.Conn
	d *requestDropper
}

func (c *droppingConn) Write(p []byte) (int, error) {
	if c.d.takes(p) {
		_ = c.Conn.Close()
		return 0, &net.OpError{Op: "write", Net: "tcp", Err: syscall.ECONNRESET}
	}
	return c.Conn.Write(p)
}

// session returns a Session on the ZK_SERVERS server whose connection
// drops requests as d says; its server list names each server twice, so
// that go-zookeeper reconnects without its pause after a full round.
func (d *requestDropper) session(t *testing.T, timeout time.Duration, opts ...SessionOption) (context.Context, *Session) {
	t.Helper()
	servers := zkServers(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	s, err := Connect(ctx, append(servers, servers...), append(opts, WithDialer(d.dial))...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return ctx, s
}

// A transaction cut off from its reply is settled once connected again:
// a versioned set is known not applied while its node is still at that
// version, and is sent again. The sync that settling starts with can be
// cut off too; it is tried again rather than leaving the outcome unknown.
func TestZKTransactionIsSentAgainWhenTheSyncSettlingItIsCutOff(t *testing.T) {
	d := &requestDropper{}
	ctx, s := d.session(t, 30*time.Second)
	p := "/zkt/settle-" + newUUID()
	_, err := s.Create(ctx, p, []byte("0"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Delete(context.Background(), p) })

	d.dropNext(opMulti, 1)
	d.dropNext(opSync, 1)
	res, err := s.Multi(ctx, SetOp(p, []byte("1"), WithVersion(0)))
	require.NoError(t, err, "the set was not applied and its node had not moved: it must be sent again")
	require.Zero(t, d.left(opMulti)+d.left(opSync), "the transaction and the sync settling it were cut off")
	require.Len(t, res, 1)
	data, st, err := s.Get(ctx, p)
	require.NoError(t, err)
	require.Equal(t, "1", string(data))
	require.Equal(t, int32(1), st.Version, "applied once")
}

// A Release cut off from its reply, whose settling is cut off too, puts
// the item back once and leaves no lock: the robustness suite saw such a
// Release fail with ErrItemLost though nothing had changed the item, and
// the same consumer take the item again while the old lock was still
// being cleaned up.
func TestZKWorkItemReleaseCutOffTwiceRequeuesTheItemOnce(t *testing.T) {
	for _, policy := range []struct {
		name string
		opt  SessionOption
	}{
		{"settled by the Session", WithRetryPolicy(ExponentialBackoff(10*time.Millisecond, 100*time.Millisecond))},
		// Too short a policy for the Session's settling to outlast the
		// cut-off syncs: the WorkItem finds the item unchanged itself.
		{"settled by the WorkItem", WithRetryPolicy(BoundedExponentialBackoff(10*time.Millisecond, 10*time.Millisecond, time.Millisecond))},
	} {
		t.Run(policy.name, func(t *testing.T) {
			d := &requestDropper{}
			ctx, s := d.session(t, 30*time.Second, policy.opt)
			path := "/zkt/release-cut-" + newUUID()
			t.Cleanup(func() {
				_ = s.Delete(context.Background(), path, WithDeleteChildren(true))
				_ = s.Delete(context.Background(), path+"-locks", WithDeleteChildren(true))
			})
			q := NewWorkQueue(s, path)
			require.NoError(t, q.Put(ctx, []byte("one")))
			wi, err := q.Take(ctx)
			require.NoError(t, err)

			d.dropNext(opMulti, 1)
			d.dropNext(opSync, 3)
			require.NoError(t, wi.Release(ctx), "nothing changed the item: the Release must go through")
			require.Zero(t, d.left(opMulti), "the Release's transaction was cut off")
			require.Less(t, d.left(opSync), 3, "its settling was cut off")
			d.dropNext(opSync, -d.left(opSync))
			kids, _, err := s.Children(ctx, path)
			require.NoError(t, err)
			require.Len(t, kids, 1, "the item is back once: %q", kids)
			require.NotEqual(t, wi.Name(), kids[0], "under a new name")
			locks, _, err := s.Children(ctx, path+"-locks")
			require.NoError(t, err)
			require.Empty(t, locks, "no lock left")
		})
	}
}
