package zkrecipes

import (
	"encoding/binary"
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// connLog records, in order, what a Session's connections carry beneath
// the Session's own wrapper: every read issued after a connection's
// handshake and the opcode of every request frame written. Dials after
// the first wait for gate.
type connLog struct {
	gate  chan struct{}
	mu    sync.Mutex
	conns []net.Conn
	log   []string
}

func (l *connLog) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	l.mu.Lock()
	i := len(l.conns)
	l.conns = append(l.conns, nil)
	l.mu.Unlock()
	if i > 0 {
		<-l.gate
	}
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.conns[i] = c
	l.mu.Unlock()
	return &loggedConn{Conn: c, l: l, i: i}, nil
}

// dialling returns how many dials have begun.
func (l *connLog) dialling() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

func (l *connLog) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log = append(l.log, fmt.Sprintf(format, args...))
}

func (l *connLog) entries() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.log...)
}

// cut closes the first connection under the client.
func (l *connLog) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.conns[0].Close()
}

type loggedConn struct {
	net.Conn
	l       *connLog
	i       int
	read    int // bytes read (read side only)
	wrote   bool
	replyAt int // bytes up to the end of the handshake's reply, once known
}

func (c *loggedConn) Read(p []byte) (int, error) {
	if c.replyAt > 0 && c.read >= c.replyAt {
		c.l.add("conn %d read", c.i)
	}
	n, err := c.Conn.Read(p)
	if c.read < 4 && c.read+n >= 4 {
		c.replyAt = 4 + int(binary.BigEndian.Uint32(p[:4])) // one read holds the length
	}
	c.read += n
	return n, err
}

func (c *loggedConn) Write(p []byte) (int, error) {
	if c.wrote && len(p) >= 12 {
		c.l.add("conn %d write op%d", c.i, binary.BigEndian.Uint32(p[8:12]))
	}
	c.wrote = true
	return c.Conn.Write(p)
}

// queuedRequests counts goroutines blocked in go-zookeeper's request with
// the request queued (past queueRequest), awaiting its reply.
func queuedRequests() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		lines := strings.Split(g, "\n")
		if len(lines) > 1 && strings.Contains(lines[0], "[select") &&
			strings.HasPrefix(lines[1], "github.com/go-zookeeper/zk.(*Conn).request(") {
			n++
		}
	}
	return n
}

// resumeWithQueuedRequest opens a Session with opts, sets a watch, cuts its
// connection, queues a request while it is down, lets it reconnect, and
// returns what the second connection carried and how long the request
// waited after that.
func resumeWithQueuedRequest(t *testing.T, opts ...SessionOption) ([]string, time.Duration) {
	l := &connLog{gate: make(chan struct{})}
	ctx, s := zkSession(t, 30*time.Second, append(opts, WithSessionTimeout(time.Minute), WithDialer(l.dial))...)
	conn := s.Conn()
	_, _, _, err := conn.ExistsW("/zkt/resume-" + newUUID()) // a watch to re-set
	require.NoError(t, err)

	l.cut()
	// go-zookeeper fails the requests queued before it starts to redial
	// (with one server it waits a second, then flushes its queue): the
	// request is sent once it is dialling.
	require.Eventually(t, func() bool { return l.dialling() == 2 }, 10*time.Second, time.Millisecond)
	replied := make(chan error, 1)
	go func() {
		_, _, err := conn.Exists("/zkt")
		replied <- err
	}()
	require.Eventually(t, func() bool { return queuedRequests() == 1 }, 10*time.Second, time.Millisecond,
		"the request waits in go-zookeeper's queue for the next connection")
	close(l.gate)
	start := time.Now()
	var waited time.Duration
	select {
	case err := <-replied:
		waited = time.Since(start)
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("the queued request was not answered after the reconnection")
	}
	require.Eventually(t, func() bool { return s.State() == StateReconnected }, 10*time.Second, time.Millisecond)

	var second []string
	for _, e := range l.entries() {
		if strings.HasPrefix(e, "conn 1 ") {
			second = append(second, strings.TrimPrefix(e, "conn 1 "))
		}
	}
	return second, waited
}

var setWatchesWrite = fmt.Sprintf("write op%d", opSetWatches)

// A session resumed on a new connection re-sets its watches before any
// reply is read there, as the Java client orders it. A request queued
// while the connection was down is written before the watches are re-set;
// its reply waits for them.
func TestZKResumedSessionReadsNoReplyBeforeItsWatchesAreReset(t *testing.T) {
	second, waited := resumeWithQueuedRequest(t)
	assert.Less(t, waited, 5*time.Second, "the reply waited for the bound, not for SetWatches")
	require.Contains(t, second, "read")
	require.Contains(t, second, setWatchesWrite)
	assert.Equal(t, "write op3", second[0], "the queued exists request leaves first")
	assert.Less(t, slices.Index(second, setWatchesWrite), slices.Index(second, "read"),
		"no reply is read before SetWatches is written: %v", second)
}

// An authenticated session resumed on a new connection sends its
// credentials first and sends nothing else, SetWatches included, until
// their reply is read: that reply is let through (the server gives it zxid
// 0, which go-zookeeper does not record), the rest wait for SetWatches as
// above. Were the credentials' reply held too, nothing would move until
// the bound.
func TestZKResumedAuthenticatedSessionReSetsItsWatches(t *testing.T) {
	second, waited := resumeWithQueuedRequest(t, WithDigestAuth("zkt", "secret"))
	assert.Less(t, waited, 5*time.Second, "the credentials' reply was held until the bound")
	const setAuthWrite = "write op100"
	require.Contains(t, second, setAuthWrite)
	require.Contains(t, second, setWatchesWrite)
	// The read that takes the credentials' reply may be issued before
	// their write is logged (it then waits for that reply), so only the
	// writes are in order here.
	writes := slices.DeleteFunc(slices.Clone(second), func(e string) bool { return e == "read" })
	assert.Equal(t, setAuthWrite, writes[0], "the credentials leave first: %v", second)
	assert.Less(t, slices.Index(second, "write op3"), slices.Index(second, setWatchesWrite), "%v", second)
}

// lateSetWatches is a dialer whose connections write go-zookeeper's
// SetWatches late, as a busy machine runs go-zookeeper's loop goroutine
// late (it builds and sends SetWatches), and whose current connection can
// be cut; a dial after a cut waits for let.
type lateSetWatches struct {
	delay   time.Duration
	let     chan struct{}
	mu      sync.Mutex
	conns   []*lateWriter
	dialled int // dials begun
}

func (d *lateSetWatches) dialling() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dialled
}

func (d *lateSetWatches) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	d.mu.Lock()
	first := len(d.conns) == 0
	d.dialled++
	d.mu.Unlock()
	if !first {
		<-d.let
	}
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	lw := &lateWriter{Conn: c, delay: d.delay}
	d.mu.Lock()
	d.conns = append(d.conns, lw)
	d.mu.Unlock()
	return lw, nil
}

func (d *lateSetWatches) cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	_ = d.conns[len(d.conns)-1].Close()
}

// lateWriter is a connection that writes SetWatches late and records
// whether a read was issued after the handshake's reply before it.
type lateWriter struct {
	net.Conn
	delay time.Duration

	mu         sync.Mutex
	read       int  // bytes read
	replyAt    int  // bytes up to the end of the handshake's reply, once known
	setWatches bool // a SetWatches has been written
	early      bool // a read was issued after the handshake's reply before it
}

func (c *lateWriter) Read(p []byte) (int, error) {
	c.mu.Lock()
	if c.replyAt > 0 && c.read >= c.replyAt && !c.setWatches {
		c.early = true
	}
	c.mu.Unlock()
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	if c.read < 4 && c.read+n >= 4 {
		c.replyAt = 4 + int(binary.BigEndian.Uint32(p[:4])) // one read holds the length
	}
	c.read += n
	c.mu.Unlock()
	return n, err
}

func (c *lateWriter) Write(p []byte) (int, error) {
	sw := len(p) >= 12 && binary.BigEndian.Uint32(p[8:12]) == opSetWatches
	if sw {
		time.Sleep(c.delay) // the fault: a SetWatches written late
	}
	n, err := c.Conn.Write(p)
	if sw {
		c.mu.Lock()
		c.setWatches = true
		c.mu.Unlock()
	}
	return n, err
}

// A session resumed while go-zookeeper is slow to re-set its watches (a
// busy machine) reads no reply before it has, however long that takes,
// races on nothing (go-zookeeper/zk#35 under -race), and misses no change
// made while the client was cut off. A data
// watch and a child watch on nodes changed while the client was cut off
// each fire, reconnection after reconnection, with requests queued
// meanwhile; a watch on a node nobody changed does not.
func TestZKResumedSessionWithALateSetWatchesRacesNothingAndMissesNoChange(t *testing.T) {
	d := &lateSetWatches{delay: 500 * time.Millisecond, let: make(chan struct{})}
	ctx, s := zkSession(t, time.Minute, WithSessionTimeout(20*time.Second), WithDialer(d.dial))
	conn, oc := s.Conn(), zkRaw(t)
	base := "/zkt/late-setwatches-" + newUUID()
	data, kids, still := base+"-data", base+"-kids", base+"-still"
	for _, p := range []string{data, kids, still} {
		_, err := oc.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		for round := range 4 {
			_ = oc.Delete(fmt.Sprintf("%s/c%d", kids, round), -1)
		}
		_ = oc.Delete(kids, -1)
		_ = oc.Delete(data, -1)
		_ = oc.Delete(still, -1)
	})
	// A watch on a node nobody changes: re-set from the zxid the client had
	// seen, it never fires.
	_, _, stillW, err := conn.GetW(still)
	require.NoError(t, err)

	for round := range 4 {
		_, _, dataW, err := conn.GetW(data)
		require.NoError(t, err)
		_, _, kidsW, err := conn.ChildrenW(kids)
		require.NoError(t, err)

		d.cut()
		require.Eventually(t, func() bool { return s.State() == StateSuspended }, 10*time.Second, time.Millisecond)
		// Requests queued before go-zookeeper redials are failed by it:
		// they are sent once it is dialling.
		require.Eventually(t, func() bool { return d.dialling() == round+2 }, 10*time.Second, time.Millisecond)
		_, err = oc.Set(data, []byte(fmt.Sprint(round)), -1)
		require.NoError(t, err)
		_, err = oc.Create(fmt.Sprintf("%s/c%d", kids, round), nil, 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
		queued := make(chan error, 3)
		for range 3 {
			go func() { _, _, err := conn.Exists(data); queued <- err }()
		}
		require.Eventually(t, func() bool { return queuedRequests() == 3 }, 10*time.Second, time.Millisecond,
			"the requests wait in go-zookeeper's queue for the next connection")
		d.let <- struct{}{}

		for name, w := range map[string]<-chan zk.Event{"data": dataW, "child": kidsW} {
			select {
			case ev := <-w:
				assert.NotEqual(t, zk.EventNotWatching, ev.Type, "round %d: the %s watch", round, name)
			case <-ctx.Done():
				t.Fatalf("round %d: the %s watch on a node changed while the client was cut off never fired", round, name)
			}
		}
		for range 3 {
			select {
			case err := <-queued:
				require.NoError(t, err)
			case <-ctx.Done():
				t.Fatalf("round %d: a queued request was not answered", round)
			}
		}
		require.Eventually(t, func() bool { return s.State() == StateReconnected }, 10*time.Second, time.Millisecond)
		_, _, err = conn.Exists(still) // answered after any notification SetWatches caused
		require.NoError(t, err)
		select {
		case ev := <-stillW:
			t.Fatalf("round %d: the watch on an unchanged node fired: %v", round, ev)
		default:
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	require.Len(t, d.conns, 5)
	for i, c := range d.conns[1:] {
		c.mu.Lock()
		assert.True(t, c.setWatches, "resumed connection %d: go-zookeeper re-set its watches", i+1)
		assert.False(t, c.early, "resumed connection %d: a reply was read before go-zookeeper re-set its watches", i+1)
		c.mu.Unlock()
	}
}
