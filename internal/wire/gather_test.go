package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordingConn records each Write, and fails them once failing is set.
type recordingConn struct {
	net.Conn
	mu      sync.Mutex
	writes  [][]byte
	failing bool
	closed  bool
	// deadlines are the write deadlines set, in order.
	deadlines []time.Time
}

func (c *recordingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failing {
		return 0, errors.New("broken pipe")
	}
	c.writes = append(c.writes, bytes.Clone(p))
	return len(p), nil
}

func (c *recordingConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}

func (c *recordingConn) recorded() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.writes...)
}

func (c *recordingConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadlines = append(c.deadlines, t)
	return nil
}

// shookConn returns a connection past its handshake, whose reply granted
// a session timeout of 6 s.
func shookConn() (*conn, *recordingConn) {
	rc := &recordingConn{}
	c := newConn(rc, new(atomic.Int64), newNotifier())
	c.shook = true
	binary.BigEndian.PutUint32(c.head[8:12], 6000)
	return c, rc
}

func TestGatheredFramesLeaveInOneWriteInTheirOrder(t *testing.T) {
	defer func(d time.Duration) { GatherWait = d }(GatherWait)
	GatherWait = time.Hour // a slow machine does not flush before the last frame
	c, rc := shookConn()
	_, err := c.Write([]byte("a"))
	require.NoError(t, err)
	c.gather(3)
	for _, f := range []string{"b", "c"} {
		n, err := c.Write([]byte(f))
		require.NoError(t, err)
		require.Equal(t, 1, n)
	}
	assert.Equal(t, [][]byte{[]byte("a")}, rc.recorded(), "nothing gathered is written before the last frame")
	_, err = c.Write([]byte("d"))
	require.NoError(t, err)
	_, err = c.Write([]byte("e"))
	require.NoError(t, err)
	assert.Equal(t, [][]byte{[]byte("a"), []byte("bcd"), []byte("e")}, rc.recorded())
}

// lateGather makes gathered frames wait 2s for the rest, for the test: a
// timer armed by gather must not fire before the test's next Write, which
// a busy machine can delay past the default 250µs (the frames would then
// go out one by one, not as one late flush).
func lateGather(t *testing.T) {
	d := GatherWait
	GatherWait = 2 * time.Second
	t.Cleanup(func() { GatherWait = d })
}

func TestGatheredFramesLeaveAfterGatherWaitWhenTheRestNeverComes(t *testing.T) {
	lateGather(t)
	c, rc := shookConn()
	c.gather(3)
	_, err := c.Write([]byte("b"))
	require.NoError(t, err)
	_, err = c.Write([]byte("c"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(rc.recorded()) == 1 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, []byte("bc"), rc.recorded()[0])
	_, err = c.Write([]byte("d"))
	require.NoError(t, err)
	assert.Equal(t, []byte("d"), rc.recorded()[1], "a frame after the late flush is written at once")
}

func TestGatheredFramesThatCannotBeWrittenCloseTheConnection(t *testing.T) {
	lateGather(t)
	c, rc := shookConn()
	c.gather(2)
	_, err := c.Write([]byte("b"))
	require.NoError(t, err)
	rc.mu.Lock()
	rc.failing = true
	rc.mu.Unlock()
	_, err = c.Write([]byte("c"))
	require.Error(t, err, "the last frame's writer learns of the failure")

	c.gather(2)
	_, err = c.Write([]byte("d"))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		return rc.closed
	}, 10*time.Second, time.Millisecond, "a late flush that fails closes the connection, so go-zookeeper reconnects")
}

// go-zookeeper bounds its writes with a write deadline of two thirds of the
// session timeout and clears it after; a late flush, written from the
// layer's own timer, is bounded the same way, and leaves the deadline
// go-zookeeper set last in force.
func TestLateFlushWritesUnderAWriteDeadlineAndRestoresTheClientsDeadline(t *testing.T) {
	lateGather(t)
	c, rc := shookConn()
	mine := time.Now().Add(time.Hour)
	require.NoError(t, c.SetWriteDeadline(mine)) // as go-zookeeper before a write
	c.gather(2)
	start := time.Now()
	_, err := c.Write([]byte("b"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(rc.recorded()) == 1 }, 10*time.Second, time.Millisecond)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	require.Len(t, rc.deadlines, 3, "go-zookeeper's, the flush's, then go-zookeeper's again")
	assert.Equal(t, mine, rc.deadlines[0])
	assert.WithinRange(t, rc.deadlines[1], start.Add(4*time.Second), time.Now().Add(4*time.Second), "two thirds of the 6 s session timeout")
	assert.Equal(t, mine, rc.deadlines[2], "go-zookeeper's deadline is in force again")
}
