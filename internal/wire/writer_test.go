package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The layer relies on how go-zookeeper (the version in go.mod) writes its
// requests; see doc.go. The test below drives a real *zk.Conn against a fake
// server that speaks just enough of the protocol, and checks every Write
// on the connection beneath the client.

// Opcodes go-zookeeper v1.0.4 sends after the handshake.
var knownOps = map[int32]string{
	1: "create", 2: "delete", 3: "exists", 4: "getData", 5: "setData", 6: "getACL",
	7: "setACL", 8: "getChildren", 9: "sync", 11: "ping", 12: "getChildren2", 13: "check",
	14: "multi", 15: "create2", 16: "reconfig", 19: "createContainer", 21: "createTTL",
	-11: "close", 100: "setAuth", 101: "setWatches",
}

// writerCheck wraps one connection and records every way its writes break
// the layer's assumptions: after the handshake, each Write carries exactly
// one whole request frame (4-byte length, xid, a known opcode, and for a
// create a readable path), Writes never overlap, and all come from one
// goroutine, each under a write deadline at most bound away (when bound is
// set).
type writerCheck struct {
	net.Conn
	inflight atomic.Int32
	mu       sync.Mutex
	writes   int
	writer   int64 // the goroutine of the first write after the handshake
	ops      []string
	problems []string
	deadline time.Time // the write deadline in force
	bound    time.Duration
}

func (c *writerCheck) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

func (c *writerCheck) Write(p []byte) (int, error) {
	if c.inflight.Add(1) > 1 {
		c.problem("a Write began while another was in progress")
	}
	defer c.inflight.Add(-1)
	c.mu.Lock()
	c.writes++
	first := c.writes == 1
	if !first {
		if c.bound > 0 && (c.deadline.IsZero() || time.Until(c.deadline) > c.bound) {
			c.problemLocked(fmt.Sprintf("a write under the deadline %v, not within %v", c.deadline, c.bound))
		}
		if g := goid(); c.writer == 0 {
			c.writer = g
		} else if g != c.writer {
			c.problemLocked(fmt.Sprintf("goroutine %d wrote after goroutine %d", g, c.writer))
		}
	}
	c.mu.Unlock()
	if first && c.bound > 0 { // the handshake: one whole ConnectRequest
		if len(p) < 4 || int(binary.BigEndian.Uint32(p[0:4]))+4 != len(p) {
			c.problem(fmt.Sprintf("a handshake write of %d bytes is not one whole ConnectRequest", len(p)))
		}
	}
	if !first { // the handshake is a ConnectRequest, not a request frame
		op, err := parseFrame(p)
		c.mu.Lock()
		if err != nil {
			c.problemLocked(err.Error())
		} else {
			c.ops = append(c.ops, op)
		}
		c.mu.Unlock()
	}
	return c.Conn.Write(p)
}

func (c *writerCheck) problem(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.problemLocked(s)
}

// problemLocked records s, keeping the first few problems of each kind.
func (c *writerCheck) problemLocked(s string) {
	if len(c.problems) < 8 {
		c.problems = append(c.problems, s)
	}
}

func (c *writerCheck) report() (ops, problems []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.ops), slices.Clone(c.problems)
}

// parseFrame parses p as one whole request frame and returns "op" or, for
// a create, "op path".
func parseFrame(p []byte) (string, error) {
	if len(p) < 12 {
		return "", fmt.Errorf("a write of %d bytes is shorter than a request header", len(p))
	}
	if n := int(binary.BigEndian.Uint32(p[0:4])); n+4 != len(p) {
		return "", fmt.Errorf("a write of %d bytes carries a frame of length field %d: not exactly one frame", len(p), n)
	}
	op := int32(binary.BigEndian.Uint32(p[8:12]))
	name, ok := knownOps[op]
	if !ok {
		return "", fmt.Errorf("unknown opcode %d", op)
	}
	switch op {
	case opCreate, opCreate2, opCreateContainer, opCreateTTL:
		if len(p) < 16 {
			return "", fmt.Errorf("a %s frame without a path", name)
		}
		l := int(int32(binary.BigEndian.Uint32(p[12:16])))
		if l < 1 || 16+l > len(p) || p[16] != '/' {
			return "", fmt.Errorf("a %s frame whose path does not parse (length %d)", name, l)
		}
		return name + " " + string(p[16:16+l]), nil
	}
	return name, nil
}

// goid is the id of the calling goroutine.
func goid() int64 {
	var buf [64]byte
	b := bytes.TrimPrefix(buf[:runtime.Stack(buf[:], false)], []byte("goroutine "))
	id, _ := strconv.ParseInt(string(b[:bytes.IndexByte(b, ' ')]), 10, 64)
	return id
}

// fakeServer answers go-zookeeper's handshake and requests with empty
// successes: a node's path for a create, an empty Stat, no data, no
// children. It serves one session (id 1) over any number of connections;
// cut closes the current one.
type fakeServer struct {
	ln   net.Listener
	mu   sync.Mutex
	cur  net.Conn
	zxid atomic.Int64
}

func startFakeServer(t *testing.T) *fakeServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &fakeServer{ln: ln}
	t.Cleanup(func() { _ = ln.Close(); s.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.cur = c
			s.mu.Unlock()
			go s.serve(c)
		}
	}()
	return s
}

func (s *fakeServer) cut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil {
		_ = s.cur.Close()
	}
}

func readFrame(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(n[:]))
	_, err := io.ReadFull(r, b)
	return b, err
}

func (s *fakeServer) serve(c net.Conn) {
	defer c.Close()
	req, err := readFrame(c) // protocolVersion, lastZxidSeen, timeOut, sessionId, password
	if err != nil || len(req) < 16 {
		return
	}
	resp := binary.BigEndian.AppendUint32(nil, 0)  // protocolVersion
	resp = append(resp, req[12:16]...)             // the timeout asked for
	resp = binary.BigEndian.AppendUint64(resp, 1)  // sessionId
	resp = binary.BigEndian.AppendUint32(resp, 16) // password
	resp = append(resp, make([]byte, 16)...)       //
	if _, err := c.Write(frame(resp)); err != nil {
		return
	}
	stat := make([]byte, 68)
	for {
		req, err := readFrame(c)
		if err != nil || len(req) < 8 {
			return
		}
		xid := binary.BigEndian.Uint32(req[0:4])
		op := int32(binary.BigEndian.Uint32(req[4:8]))
		zxid := s.zxid.Add(1)
		if xid == 0xfffffffe || op == opSetAuth { // as a server answers them
			zxid = 0
		}
		reply := binary.BigEndian.AppendUint32(nil, xid)
		reply = binary.BigEndian.AppendUint64(reply, uint64(zxid))
		reply = binary.BigEndian.AppendUint32(reply, 0) // err
		switch op {
		case opCreate, opCreateContainer, opCreateTTL, 9: // the path (sync too)
			l := binary.BigEndian.Uint32(req[8:12])
			reply = append(reply, req[8:12+l]...)
		case 3, 5: // exists, setData: a Stat
			reply = append(reply, stat...)
		case 4: // getData: no data, a Stat
			reply = binary.BigEndian.AppendUint32(reply, 0xffffffff)
			reply = append(reply, stat...)
		case 12: // getChildren2: no children, a Stat
			reply = binary.BigEndian.AppendUint32(reply, 0)
			reply = append(reply, stat...)
		}
		if _, err := c.Write(frame(reply)); err != nil {
			return
		}
	}
}

func frame(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// go-zookeeper writes every request, from many calling goroutines, as one
// whole frame per Write, from one goroutine, never two Writes at once; a
// create's frame carries its path where notice.go reads it; each write is
// bounded by a deadline of two thirds of the session timeout, as the
// layer's own late flush is (gather.go). That holds on a resumed
// connection too, for SetAuth and SetWatches (resume.go).
func TestGoZookeeperWritesOneRequestFramePerWrite(t *testing.T) {
	srv := startFakeServer(t)
	var mu sync.Mutex
	var conns []*writerCheck
	dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, address, timeout)
		if err != nil {
			return nil, err
		}
		wc := &writerCheck{Conn: c, bound: 2 * time.Second} // two thirds of the session timeout
		mu.Lock()
		conns = append(conns, wc)
		mu.Unlock()
		return wc, nil
	}
	// The check sits beneath the layer, as the TCP connection does: with
	// nothing gathered, the layer hands each Write on as it came, on the
	// writer's goroutine. (Without the layer, go-zookeeper's own race on
	// the last zxid seen, go-zookeeper/zk#35, fails the test under -race
	// on the resumed connection.)
	connected := make(chan struct{}, 4)
	zc, _, err := zk.Connect([]string{srv.ln.Addr().String()}, 3*time.Second, zk.WithDialer(New().Dialer(dial)), zk.WithLogInfo(false),
		zk.WithLogger(quiet{}), zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type == zk.EventSession && ev.State == zk.StateHasSession {
				connected <- struct{}{}
			}
		}))
	require.NoError(t, err)
	defer zc.Close()
	awaitConnected := func() {
		select {
		case <-connected:
		case <-time.After(10 * time.Second):
			t.Fatal("no session")
		}
	}
	awaitConnected()
	require.NoError(t, zc.AddAuth("digest", []byte("u:p")))
	_, _, _, err = zc.ExistsW("/watched") // re-set with SetWatches on the next connection
	require.NoError(t, err)

	var created []string
	work := func(round int) {
		var wg sync.WaitGroup
		for g := range 16 {
			p := fmt.Sprintf("/dir/_c_%d-%d-lock-", round, g)
			created = append(created, "create "+p)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := zc.Create(p, []byte("data"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
					t.Error(err)
					return
				}
				for i := range 10 {
					var err error
					switch i % 5 {
					case 0:
						_, _, err = zc.Children("/dir")
					case 1:
						_, _, err = zc.Get(p)
					case 2:
						_, _, err = zc.Exists(p)
					case 3:
						_, err = zc.Set(p, []byte("x"), -1)
					case 4:
						err = zc.Delete(p+"0000000001", -1)
					}
					if err != nil {
						t.Error(err)
					}
				}
			}()
		}
		wg.Wait()
	}
	work(0)
	srv.cut() // go-zookeeper resumes the session on a new connection
	awaitConnected()
	work(1)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, conns, 2)
	var ops []string
	for i, c := range conns {
		o, problems := c.report()
		assert.Empty(t, problems, "connection %d", i)
		ops = append(ops, o...)
	}
	for _, want := range append(created, "setAuth", "setWatches", "getChildren2", "getData", "exists", "setData", "delete") {
		assert.Contains(t, ops, want)
	}
	o, _ := conns[1].report()
	assert.Equal(t, "setAuth", o[0], "a resumed connection re-sends the credentials first")
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// The check above catches each way a writer could break the assumptions.
func TestWriterCheckCatchesSplitFramesOverlappingWritesOtherWritersAndMissingDeadlines(t *testing.T) {
	create := func(path string) []byte {
		b := binary.BigEndian.AppendUint32(nil, 7) // xid
		b = binary.BigEndian.AppendUint32(b, opCreate)
		b = binary.BigEndian.AppendUint32(b, uint32(len(path)))
		return frame(append(b, path...))
	}
	newCheck := func() *writerCheck {
		c := &writerCheck{Conn: &recordingConn{}}
		_, _ = c.Write([]byte("handshake"))
		return c
	}
	problems := func(c *writerCheck) []string { _, p := c.report(); return p }

	c := newCheck()
	_, _ = c.Write(create("/a/b"))
	assert.Empty(t, problems(c), "one whole frame")

	c = newCheck()
	f := create("/a/b")
	_, _ = c.Write(f[:10])
	_, _ = c.Write(f[10:])
	assert.NotEmpty(t, problems(c), "a frame split over two writes")

	c = newCheck()
	_, _ = c.Write(append(create("/a/b"), create("/a/c")...))
	assert.NotEmpty(t, problems(c), "two frames in one write")

	c = newCheck()
	bad := create("/a/b")
	binary.BigEndian.PutUint32(bad[8:12], 77)
	_, _ = c.Write(bad)
	assert.NotEmpty(t, problems(c), "an unknown opcode")

	c = newCheck()
	bad = create("/a/b")
	binary.BigEndian.PutUint32(bad[12:16], 99)
	_, _ = c.Write(bad)
	assert.NotEmpty(t, problems(c), "a create whose path length runs past the frame")

	c = newCheck()
	_, _ = c.Write(create("/a/b"))
	done := make(chan struct{})
	go func() { _, _ = c.Write(create("/a/c")); close(done) }()
	<-done
	assert.NotEmpty(t, problems(c), "a second writing goroutine")

	c = &writerCheck{Conn: &recordingConn{}, bound: time.Second}
	_, _ = c.Write([]byte("handshake"))
	_, _ = c.Write(create("/a/b"))
	assert.NotEmpty(t, problems(c), "a write without a deadline")
	require.NoError(t, c.SetWriteDeadline(time.Now().Add(time.Second)))
	c.problems = nil
	_, _ = c.Write(create("/a/b"))
	assert.Empty(t, problems(c), "a write under a deadline")

	blocking := &blockingConn{entered: make(chan struct{}), release: make(chan struct{})}
	c = &writerCheck{Conn: blocking}
	_, _ = c.Write([]byte("handshake"))
	go func() { _, _ = c.Write(create("/a/b")) }()
	<-blocking.entered
	_, _ = c.Write(create("/a/c"))
	close(blocking.release)
	assert.Contains(t, problems(c), "a Write began while another was in progress")
}

// blockingConn's second Write (the first after the handshake) blocks until
// release closes.
type blockingConn struct {
	net.Conn
	n       atomic.Int32
	entered chan struct{}
	release chan struct{}
}

func (c *blockingConn) Write(p []byte) (int, error) {
	if c.n.Add(1) == 2 {
		close(c.entered)
		<-c.release
	}
	return len(p), nil
}
