package wire

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tracking of shots.go is checked on the frames a real go-zookeeper
// client writes and reads, against nodeServer, which answers as a
// ZooKeeper server would whether a node exists (NONODE otherwise), and
// sends the notifications the test asks for.

// nodeServer serves one session over any number of connections. Its
// nodes exist; every other path is missing.
type nodeServer struct {
	ln    net.Listener
	nodes map[string]bool

	mu        sync.Mutex
	cur       net.Conn
	wmu       *sync.Mutex // the current connection's writes
	sid       int64
	expire    bool            // the next handshake answers "expired"
	hang      string          // a path whose watching requests get no reply
	hung      chan struct{}   // told of each request on hang
	setW      chan [][]string // SetWatches received: data, exist, child paths
	zxid      int64
	connected chan int64 // the sessions granted
	ops       []int32    // the opcodes of the requests received, in order
}

func startNodeServer(t *testing.T, nodes ...string) *nodeServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &nodeServer{ln: ln, nodes: map[string]bool{}, sid: 1, hung: make(chan struct{}, 4),
		setW: make(chan [][]string, 4), connected: make(chan int64, 4)}
	for _, n := range nodes {
		s.nodes[n] = true
	}
	t.Cleanup(func() { _ = ln.Close(); s.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

func (s *nodeServer) cut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil {
		_ = s.cur.Close()
	}
}

// notify sends a notification (type, path) on the current connection.
func (s *nodeServer) notify(t *testing.T, typ int32, path string) {
	t.Helper()
	b := binary.BigEndian.AppendUint32(nil, 0xffffffff) // xid -1
	b = binary.BigEndian.AppendUint64(b, 0xffffffffffffffff)
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(typ))
	b = binary.BigEndian.AppendUint32(b, 3) // SyncConnected
	b = binary.BigEndian.AppendUint32(b, uint32(len(path)))
	b = append(b, path...)
	s.mu.Lock()
	c, wmu := s.cur, s.wmu
	s.mu.Unlock()
	wmu.Lock()
	defer wmu.Unlock()
	_, err := c.Write(frame(b))
	require.NoError(t, err)
}

func readStrings(b []byte) ([]string, []byte) {
	n := int(int32(binary.BigEndian.Uint32(b)))
	b = b[4:]
	var out []string
	for range max(n, 0) {
		m := int(binary.BigEndian.Uint32(b))
		out = append(out, string(b[4:4+m]))
		b = b[4+m:]
	}
	return out, b
}

func (s *nodeServer) serve(c net.Conn) {
	defer c.Close()
	req, err := readFrame(c)
	if err != nil || len(req) < 16 {
		return
	}
	wmu := &sync.Mutex{}
	s.mu.Lock()
	sid := s.sid
	if s.expire {
		s.expire, sid = false, 0
		s.sid++
	}
	s.cur, s.wmu = c, wmu
	s.mu.Unlock()
	resp := binary.BigEndian.AppendUint32(nil, 0)
	resp = binary.BigEndian.AppendUint32(resp, 4000)
	if sid == 0 {
		resp = binary.BigEndian.AppendUint32(resp[:4], 0) // timeout 0: expired
	}
	resp = binary.BigEndian.AppendUint64(resp, uint64(sid))
	resp = binary.BigEndian.AppendUint32(resp, 16)
	resp = append(resp, make([]byte, 16)...)
	if _, err := c.Write(frame(resp)); err != nil || sid == 0 {
		return
	}
	s.connected <- sid
	stat := make([]byte, 68)
	for {
		req, err := readFrame(c)
		if err != nil || len(req) < 8 {
			return
		}
		xid := binary.BigEndian.Uint32(req[0:4])
		op := int32(binary.BigEndian.Uint32(req[4:8]))
		var path string
		if len(req) >= 12 && op != opSetWatches {
			if n := int(binary.BigEndian.Uint32(req[8:12])); 12+n <= len(req) {
				path = string(req[12 : 12+n])
			}
		}
		s.mu.Lock()
		s.ops = append(s.ops, op)
		s.zxid++
		zxid, exists, hang := s.zxid, s.nodes[path], path != "" && path == s.hang
		s.mu.Unlock()
		if hang {
			s.hung <- struct{}{}
			continue
		}
		code := int32(0)
		var body []byte
		switch op {
		case opExists, opGetData, opGetChildren2:
			if !exists {
				code = codeNoNode
				break
			}
			if op != opExists {
				body = binary.BigEndian.AppendUint32(body, map[int32]uint32{opGetData: 0xffffffff, opGetChildren2: 0}[op])
			}
			body = append(body, stat...)
		case opSetWatches:
			data, rest := readStrings(req[16:])
			exist, rest := readStrings(rest)
			child, _ := readStrings(rest)
			s.setW <- [][]string{data, exist, child}
		}
		reply := binary.BigEndian.AppendUint32(nil, xid)
		reply = binary.BigEndian.AppendUint64(reply, uint64(zxid))
		reply = binary.BigEndian.AppendUint32(reply, uint32(code))
		wmu.Lock()
		_, err = c.Write(frame(append(reply, body...)))
		wmu.Unlock()
		if err != nil {
			return
		}
	}
}

// connectTo connects a go-zookeeper client through a new Layer.
func connectTo(t *testing.T, s *nodeServer) (*Layer, *zk.Conn) {
	l := New()
	zc, _, err := zk.Connect([]string{s.ln.Addr().String()}, 4*time.Second, zk.WithDialer(l.Dialer(net.DialTimeout)),
		zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	require.NoError(t, err)
	t.Cleanup(zc.Close)
	awaitSession(t, s)
	return l, zc
}

func awaitSession(t *testing.T, s *nodeServer) int64 {
	t.Helper()
	select {
	case sid := <-s.connected:
		return sid
	case <-time.After(10 * time.Second):
		t.Fatal("no session")
		return 0
	}
}

func awaitEvent(t *testing.T, ch <-chan zk.Event, typ zk.EventType) {
	t.Helper()
	select {
	case e := <-ch:
		require.Equal(t, typ, e.Type)
	case <-time.After(10 * time.Second):
		t.Fatalf("no %v", typ)
	}
}

// followed returns the layer's one-shot watches by path.
func followed(l *Layer) map[string]uint8 {
	s := &l.shots
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string]uint8{}
	for p, sp := range s.paths {
		m[p] = sp.kinds
	}
	return m
}

// A watch counts once the server's reply says it is set (exists on a
// missing node: an exist watch; getData on one: none), and goes with the
// notification that fires it on the server: data and exist watches with
// NodeCreated, NodeDataChanged, NodeDeleted; child watches with
// NodeChildrenChanged and NodeDeleted. Nothing is left once every watch
// fired.
func TestShotsFollowGoZookeepersWatchesAsTheServerSetsAndFiresThem(t *testing.T) {
	s := startNodeServer(t, "/a", "/d")
	l, zc := connectTo(t, s)

	_, _, err := zc.Get("/a") // no watch
	require.NoError(t, err)
	assert.Empty(t, followed(l), "a read without the watch flag")
	_, _, aData, err := zc.GetW("/a")
	require.NoError(t, err)
	_, _, aKids, err := zc.ChildrenW("/a")
	require.NoError(t, err)
	_, _, mExist, err := zc.ExistsW("/m")
	require.NoError(t, err)
	_, _, _, err = zc.GetW("/m")
	require.ErrorIs(t, err, zk.ErrNoNode)
	_, _, _, err = zc.ChildrenW("/m")
	require.ErrorIs(t, err, zk.ErrNoNode)
	_, _, dData, err := zc.ExistsW("/d")
	require.NoError(t, err)
	_, _, dKids, err := zc.ChildrenW("/d")
	require.NoError(t, err)
	assert.Equal(t, map[string]uint8{"/a": shotData | shotChild, "/m": shotExist, "/d": shotData | shotChild}, followed(l))

	s.notify(t, 3, "/a") // NodeDataChanged
	awaitEvent(t, aData, zk.EventNodeDataChanged)
	assert.Equal(t, shotChild, l.shots.kinds("/a"), "the data watch fired, the child watch stays")
	s.notify(t, 4, "/a") // NodeChildrenChanged
	awaitEvent(t, aKids, zk.EventNodeChildrenChanged)
	s.notify(t, 1, "/m") // NodeCreated
	awaitEvent(t, mExist, zk.EventNodeCreated)
	s.notify(t, 2, "/d") // NodeDeleted
	awaitEvent(t, dData, zk.EventNodeDeleted)
	awaitEvent(t, dKids, zk.EventNodeDeleted)
	assert.Empty(t, followed(l), "every watch fired")
	assert.Zero(t, l.shots.n.Load())
	assert.Zero(t, l.shots.npend.Load())
}

// On a resumed session the watches are go-zookeeper's SetWatches lists:
// a request that was never answered on the lost connection sets none;
// a notification the SetWatches fires clears its watch as any other.
func TestShotsOnAResumedSessionAreTheSetWatchesLists(t *testing.T) {
	s := startNodeServer(t, "/a", "/c", "/h")
	l, zc := connectTo(t, s)
	_, _, aData, err := zc.GetW("/a")
	require.NoError(t, err)
	_, _, _, err = zc.ChildrenW("/c")
	require.NoError(t, err)
	_, _, _, err = zc.ExistsW("/m")
	require.NoError(t, err)
	s.mu.Lock()
	s.hang = "/h"
	s.mu.Unlock()
	lost := make(chan error, 1)
	go func() { _, _, _, err := zc.GetW("/h"); lost <- err }()
	select {
	case <-s.hung:
	case <-time.After(10 * time.Second):
		t.Fatal("the request on /h did not reach the server")
	}
	assert.Equal(t, int32(1), l.shots.npend.Load(), "the request on /h waits for its reply")

	s.cut()
	awaitSession(t, s) // resumed
	var lists [][]string
	select {
	case lists = <-s.setW:
	case <-time.After(10 * time.Second):
		t.Fatal("no SetWatches")
	}
	assert.Equal(t, [][]string{{"/a"}, {"/m"}, {"/c"}}, lists)
	select {
	case err := <-lost:
		require.Error(t, err, "go-zookeeper failed the request on /h")
	case <-time.After(10 * time.Second):
		t.Fatal("the request on /h neither failed nor returned")
	}
	assert.Equal(t, map[string]uint8{"/a": shotData, "/m": shotExist, "/c": shotChild}, followed(l))
	assert.Zero(t, l.shots.npend.Load())

	s.notify(t, 3, "/a") // as a server fires a watch whose node changed meanwhile
	awaitEvent(t, aData, zk.EventNodeDataChanged)
	assert.Equal(t, map[string]uint8{"/m": shotExist, "/c": shotChild}, followed(l))
}

// A new session holds no watch: go-zookeeper drops its own, sends no
// SetWatches, and the layer follows none.
func TestShotsOnANewSessionAreNone(t *testing.T) {
	s := startNodeServer(t, "/a")
	l, zc := connectTo(t, s)
	_, _, _, err := zc.GetW("/a")
	require.NoError(t, err)
	_, _, _, err = zc.ExistsW("/m")
	require.NoError(t, err)
	require.NotEmpty(t, followed(l))
	s.mu.Lock()
	s.expire = true
	s.mu.Unlock()
	s.cut()
	require.Equal(t, int64(2), awaitSession(t, s), "a new session")
	require.Eventually(t, func() bool { return zc.SessionID() == 2 }, 10*time.Second, time.Millisecond)
	// A request on the new session: a SetWatches written before it has
	// reached the server by its reply.
	_, _, err = zc.Exists("/a")
	require.NoError(t, err)
	assert.Empty(t, followed(l))
	select {
	case <-s.setW:
		t.Fatal("go-zookeeper re-set watches on a new session")
	default:
	}
}

// A request without the watch flag, the reply to any request, and a
// notification cost the tracking no allocation, however many watches it
// follows; a watching request on a path it follows already costs none
// either.
func TestShotsCostNoAllocationPerRequestReplyOrNotification(t *testing.T) {
	l := New()
	client, server := net.Pipe()
	defer server.Close()
	sc := &streamConn{Conn: client}
	c, err := l.Dialer(func(string, string, time.Duration) (net.Conn, error) { return sc, nil })("tcp", "127.0.0.1:2181", time.Second)
	require.NoError(t, err)
	defer c.Close()
	handshake(t, c, server)
	go func() { _, _ = io.Copy(io.Discard, server) }()

	req := func(xid, op int32, path string, watch bool) []byte {
		b := binary.BigEndian.AppendUint32(nil, 0)
		b = binary.BigEndian.AppendUint32(b, uint32(xid))
		b = binary.BigEndian.AppendUint32(b, uint32(op))
		b = binary.BigEndian.AppendUint32(b, uint32(len(path)))
		b = append(b, path...)
		if watch {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		binary.BigEndian.PutUint32(b, uint32(len(b)-4))
		return b
	}
	long := "/a/rather/long/path/that/no/small/buffer/would/hold/0000000001"
	// Follow watches, one of them not answered yet: every reply is looked at.
	_, err = c.Write(req(7, opGetData, long, true))
	require.NoError(t, err)
	_, err = c.Write(req(8, opGetData, "/other", true))
	require.NoError(t, err)
	require.Equal(t, int32(2), l.shots.npend.Load())
	l.shots.repliedAt(7, CodeOK, 0)
	require.Equal(t, shotData, l.shots.kinds(long))

	plain := req(9, opGetData, long, false)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { _, _ = c.Write(plain) }), "a request without the watch flag")
	xid := int32(10)
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		_, _ = c.Write(req2(xid, long))
		l.shots.repliedAt(xid, CodeOK, 0)
		xid++
	}), "a watching request on a followed path, and its reply")

	// Replies and notifications read through the connection.
	var hdr [4]byte
	body := make([]byte, 1<<10)
	read := func() {
		_, _ = io.ReadFull(c, hdr[:])
		_, _ = io.ReadFull(c, body[:binary.BigEndian.Uint32(hdr[:])])
	}
	n := binary.BigEndian.AppendUint32(nil, 0xffffffff)
	n = binary.BigEndian.AppendUint64(n, 1)
	n = binary.BigEndian.AppendUint32(n, 0)
	n = binary.BigEndian.AppendUint32(n, 4) // NodeChildrenChanged: fires no data watch
	n = binary.BigEndian.AppendUint32(n, 3)
	n = binary.BigEndian.AppendUint32(n, uint32(len(long)))
	sc.frame = append(ownTestReply(5, 1, 0, make([]byte, 100)), frame(append(n, long...))...)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { read(); read() }), "a reply while a watching request waits, and a notification on a followed path")
	assert.Equal(t, shotData, l.shots.kinds(long))
}

// req2 is a getData request with the watch flag on path, its frame built
// in a buffer of its own (the caller's allocations are not the layer's).
var req2buf [256]byte

func req2(xid int32, path string) []byte {
	b := append(req2buf[:0], 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(xid))
	b = binary.BigEndian.AppendUint32(b, opGetData)
	b = binary.BigEndian.AppendUint32(b, uint32(len(path)))
	b = append(append(b, path...), 1)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// BenchmarkShotsWrite is the cost of the tracking on go-zookeeper's
// writes: a request without the watch flag, and a watching request on a
// followed path with its reply.
func BenchmarkShotsWrite(b *testing.B) {
	path := "/bench/lock/_c_0b6f5e1c-7d39-4f7e-9a51-3d2f0a4c5b6e-lock-0000000042"
	plain := append(binary.BigEndian.AppendUint32(nil, 0), make([]byte, 8)...)
	binary.BigEndian.PutUint32(plain[8:], opGetData)
	plain = binary.BigEndian.AppendUint32(plain, uint32(len(path)))
	plain = append(append(plain, path...), 0)
	binary.BigEndian.PutUint32(plain, uint32(len(plain)-4))
	b.Run("no watch", func(b *testing.B) {
		var s shots
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			s.wrote(plain, nil)
		}
	})
	b.Run("watch", func(b *testing.B) {
		var s shots
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			s.wrote(req2(int32(i), path), nil)
			s.repliedAt(int32(i), CodeOK, 0)
		}
	})
}

// A reply that sets a watch counts only once it has passed whole: one cut
// short by a lost connection never reaches go-zookeeper, which then sets
// no watch (and sends no SetWatches for it on the next connection).
func TestAReplyCutShortSetsNoWatch(t *testing.T) {
	client, server := net.Pipe()
	l := New()
	c, err := l.Dialer(func(string, string, time.Duration) (net.Conn, error) { return client, nil })("tcp", "127.0.0.1:2181", time.Second)
	require.NoError(t, err)
	defer c.Close()
	handshake(t, c, server)

	// getData /w with the watch flag: length, xid 7, opcode 4, path, flag.
	f := binary.BigEndian.AppendUint32(nil, 4+4+4+2+1)
	f = binary.BigEndian.AppendUint32(f, 7)
	f = binary.BigEndian.AppendUint32(f, opGetData)
	f = binary.BigEndian.AppendUint32(f, 2)
	f = append(f, '/', 'w', 1)
	go func() { _, _ = io.ReadFull(server, make([]byte, len(f))) }()
	_, err = c.Write(f)
	require.NoError(t, err)

	reply := ownTestReply(7, 0x20, 0, []byte("data and a stat"))
	go func() {
		_, _ = server.Write(reply[:len(reply)-3])
		_ = server.Close()
	}()
	_, err = io.ReadFull(c, make([]byte, len(reply)))
	require.Error(t, err, "the connection was lost mid-reply")
	assert.False(t, l.shots.held() > 0, "a watch counted that go-zookeeper never set")
}
