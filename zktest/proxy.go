package zktest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a TCP proxy on 127.0.0.1 in front of one loopback target, for injecting
// network faults between a client and one server: silence ([Proxy.Blackhole]),
// latency ([Proxy.SetDelay]), connection resets ([Proxy.ResetAll]), lost replies
// ([Proxy.LoseReplies], [Proxy.LoseRepliesAfter], [Proxy.LoseRepliesOnNextConn]) and
// tampered replies ([Proxy.RewriteReplies]).
// Point a client at [Proxy.Addr] instead of the server. Bytes are never reordered,
// and never dropped except by a reply loss: during a blackhole they wait in the proxy
// (and, beyond a small buffer, in the kernel), as TCP retransmission would deliver
// them after a healed partition. Methods are safe for concurrent use.
type Proxy struct {
	target string
	ln     net.Listener
	done   chan struct{} // closed by Close
	wg     sync.WaitGroup

	mu     sync.Mutex
	open   chan struct{} // closed while traffic flows; replaced by Blackhole
	delay  time.Duration
	conns  map[*proxyConn]struct{}
	armed  []*armedLoss // reply losses waiting for the next connections, in order
	rwOld  []byte       // RewriteReplies, for the next connections
	rwNew  []byte
	closed bool

	requestReplies atomic.Int64 // replies to requests delivered (RequestReplies)
}

// NewProxy starts a [Proxy] to the loopback address target and registers tb.Cleanup
// to close it. It calls tb.Fatalf when target is not loopback or no port is free.
// Call it from the test goroutine only.
func NewProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	p, err := ListenProxy(target)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	tb.Cleanup(func() { _ = p.Close() })
	return p
}

// ListenProxy starts a [Proxy] listening on 127.0.0.1 at an OS-chosen port in front of
// target, which must be a loopback address ([ErrNotLoopback] otherwise). The target
// need not be up yet: each accepted connection dials it, and a failed dial closes the
// accepted connection. The caller must call [Proxy.Close].
func ListenProxy(target string) (*Proxy, error) {
	return ListenProxyAt("127.0.0.1:0", target)
}

// NewProxyAt is [NewProxy] listening at listen, as [ListenProxyAt] does.
func NewProxyAt(tb testing.TB, listen, target string) *Proxy {
	tb.Helper()
	p, err := ListenProxyAt(listen, target)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	tb.Cleanup(func() { _ = p.Close() })
	return p
}

// ListenProxyAt is [ListenProxy] listening at listen: 127.0.0.1 with a
// port, 0 for one the OS picks ([ErrNotLoopback] for any other host:
// servers and proxies listen on 127.0.0.1 only). A proxy started on the
// port of one that was closed stands for a server that came back at the
// same address, possibly another server (a rescheduled member whose name
// a test's DNS server moves).
func ListenProxyAt(listen, target string) (*Proxy, error) {
	t, err := loopbackAddr(target)
	if err != nil {
		return nil, err
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("zktest: bad address %q: %w", listen, err)
	}
	if host != "127.0.0.1" {
		return nil, fmt.Errorf("%w: %q (proxies listen on 127.0.0.1)", ErrNotLoopback, listen)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return nil, fmt.Errorf("zktest: bad port in %q", listen)
	}
	ln, err := net.Listen("tcp4", listen)
	if err != nil {
		return nil, err
	}
	open := make(chan struct{})
	close(open)
	p := &Proxy{target: t, ln: ln, done: make(chan struct{}), open: open, conns: make(map[*proxyConn]struct{})}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr returns the proxy's listening address, "127.0.0.1:port".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target returns the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Blackhole stops forwarding in both directions, on live connections and on
// connections accepted meanwhile, while keeping every socket open: peers see silence,
// not a reset or a close. Data and closes wait until [Proxy.Heal]. Idempotent.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
		p.open = make(chan struct{})
	default:
	}
}

// Heal resumes forwarding after [Proxy.Blackhole], delivering what waited. Idempotent.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
	default:
		close(p.open)
	}
}

// SetDelay makes every chunk of data wait d after it was read before it is forwarded,
// in each direction (latency, not a bandwidth limit). Zero removes the delay.
func (p *Proxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

// RewriteReplies makes every connection the proxy accepts from now on replace each
// occurrence of old with new in the frames the server sends (in a frame's body, not
// in its length): a link that tampers with the replies, such as one that rewrites a
// SASL challenge. new must be as long as old, so that each frame keeps its length;
// RewriteReplies panics otherwise. The proxy reassembles each frame before it
// rewrites it, so that a match split across TCP segments is found: a client gets a
// frame only once the server has sent all of it (a frame cut short by the server's
// close passes as it came). Live connections are not affected; an empty old stops
// the rewriting for the connections accepted after the call. The other faults act on
// the rewritten replies: a lost or held reply is lost or held rewritten, and the
// replies are counted as before.
func (p *Proxy) RewriteReplies(old, new []byte) {
	if len(new) != len(old) {
		panic("zktest: Proxy.RewriteReplies: new and old differ in length")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rwOld, p.rwNew = bytes.Clone(old), bytes.Clone(new)
}

// ResetAll aborts every live connection with a TCP reset on both sides (SO_LINGER 0,
// then close), so client and server see ECONNRESET rather than an orderly close. New
// connections are accepted as usual.
func (p *Proxy) ResetAll() {
	p.mu.Lock()
	cs := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		cs = append(cs, c)
	}
	p.mu.Unlock()
	for _, c := range cs {
		c.reset()
	}
}

// LoseReplies makes every live connection lose the server's replies, the fault of
// ZOOKEEPER-1262 (a request that succeeds on the server while its reply is lost):
// from the call on, what the server sends is withheld from the client and never
// delivered, while the client's requests still reach the server; hold later the
// connection is reset, as by [Proxy.ResetAll]. A ZooKeeper client then reconnects
// and resumes its session, whose ephemeral nodes survive; a hold shorter than the
// client's read timeout (two thirds of the session timeout in go-zookeeper) makes the
// proxy's reset, not the client, end the connection. Connections accepted after the
// call are not affected (see [Proxy.LoseRepliesOnNextConn]); a connection already
// losing its replies keeps its reset time.
//
// The returned channel is closed once every connection hit has ended (reset, closed
// by either side, or by [Proxy.Close]); at once when there was none.
func (p *Proxy) LoseReplies(hold time.Duration) <-chan struct{} {
	return p.LoseRepliesAfter(0, hold)
}

// LoseRepliesAfter is [Proxy.LoseReplies] that first lets n more replies through on
// each live connection. A reply is a ZooKeeper frame (a 4-byte big-endian length,
// then that many bytes), counted when its last byte is delivered: a frame partly
// delivered at the call counts as one. The loss, and the hold before the reset,
// begin once the n-th reply has been delivered; a connection that never gets that
// far loses nothing, and its channel closes only when it ends. An n below zero counts
// as zero. A call on a connection still passing the replies of an earlier call
// replaces that count.
func (p *Proxy) LoseRepliesAfter(n int, hold time.Duration) <-chan struct{} {
	done := make(chan struct{})
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		close(done)
		return done
	}
	hit := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		if c.setLoss(max(n, 0), hold) {
			p.resetAfter(c, hold)
		}
		hit = append(hit, c)
	}
	p.wg.Add(1) // under p.mu, before Close can wait
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		for _, c := range hit {
			<-c.dead
		}
		close(done)
	}()
	return done
}

// LoseRepliesOnNextConn arms a reply loss for the next connection the proxy accepts,
// whichever client makes it: its first n replies pass (the first being the server's
// reply to the client's connect request), then it loses its replies as with
// [Proxy.LoseRepliesAfter] and is reset hold later. With n = 1 every request a
// client sends after it reconnected loses its reply: arm it before a fault that makes
// the client reconnect. Calls queue up, each arming the next connection not yet
// armed; [Proxy.LoseReplies] and [Proxy.LoseRepliesAfter] do not touch them.
//
// The returned channel is closed once that connection has ended, or by
// [Proxy.Disarm] or [Proxy.Close] if none came.
func (p *Proxy) LoseRepliesOnNextConn(n int, hold time.Duration) <-chan struct{} {
	a := &armedLoss{n: max(n, 0), hold: hold, done: make(chan struct{})}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		close(a.done)
	} else {
		p.armed = append(p.armed, a)
	}
	return a.done
}

// Disarm cancels the reply losses armed by [Proxy.LoseRepliesOnNextConn] that no
// connection has taken yet, closing their channels, and returns how many there were.
// Losses already set on a connection go on.
func (p *Proxy) Disarm() int {
	p.mu.Lock()
	armed := p.armed
	p.armed = nil
	p.mu.Unlock()
	for _, a := range armed {
		close(a.done)
	}
	return len(armed)
}

// Conns returns the number of live client connections.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Close stops listening, closes every connection and waits for the proxy's goroutines
// to end. Idempotent; it returns the listener's close error of the first call.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	cs := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		cs = append(cs, c)
	}
	p.mu.Unlock()
	p.Disarm()
	close(p.done)
	err := p.ln.Close()
	for _, c := range cs {
		c.kill()
	}
	p.wg.Wait()
	return err
}

func (p *Proxy) gate() (chan struct{}, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.open, p.delay
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case <-p.done:
				return
			default:
				continue
			}
		}
		p.wg.Add(1)
		go p.handle(c.(*net.TCPConn))
	}
}

// resetAfter resets c d after the call, unless it ends before. The caller holds
// p.mu with the proxy open, or runs on a goroutine p.wg counts.
func (p *Proxy) resetAfter(c *proxyConn, d time.Duration) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			c.reset()
		case <-c.dead:
		}
	}()
}

// armedLoss is a reply loss waiting for the next connection (LoseRepliesOnNextConn).
type armedLoss struct {
	n    int
	hold time.Duration
	done chan struct{} // closed when its connection has ended, or by Disarm or Close
}

// proxyConn is one client connection and its connection to the target.
type proxyConn struct {
	client, server *net.TCPConn
	dead           chan struct{}
	once           sync.Once

	mu     sync.Mutex
	pass   int           // replies still to deliver before the loss starts (when lose)
	hold   time.Duration // from the start of the loss to the reset
	lose   bool          // a reply loss is set
	losing bool          // the server's bytes are withheld
	frames frameCounter  // the server's frames delivered so far

	// Request-reply faults (LoseRequestReply, HoldRequestReply). wmu orders
	// the writes of the reply pipe and of a release.
	wmu     sync.Mutex
	replies frameCounter // every server frame, from the connection's start
	pend    []byte       // a frame's first bytes, kept until its xid is known
	fault   *connFault   // a request-reply fault waiting for its reply
	holding *ReplyFault  // the fault holding the server's bytes, if any
	held    []byte       // the bytes it holds

	// RewriteReplies, set at the start; used by the reply pipe only.
	rwOld, rwNew []byte
	rwFrames     frameCounter
	rwBuf        []byte // the server's frame being reassembled
}

// rewrite returns the frames of the server that data completes, each with
// every occurrence of c.rwOld in its body replaced by c.rwNew, and keeps the
// start of a frame that data leaves unfinished for the next call.
func (c *proxyConn) rewrite(data []byte) []byte {
	var out []byte
	for len(data) > 0 {
		n, end := c.rwFrames.next(data)
		c.rwBuf = append(c.rwBuf, data[:n]...)
		data = data[n:]
		if end {
			out = append(out, c.rwBuf[:4]...)
			out = append(out, bytes.ReplaceAll(c.rwBuf[4:], c.rwOld, c.rwNew)...)
			c.rwBuf = c.rwBuf[:0]
		}
	}
	return out
}

// setLoss sets a loss of the server's replies after n more (LoseRepliesAfter). It
// returns true when the loss starts now: the caller then schedules the reset.
func (c *proxyConn) setLoss(n int, hold time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.losing {
		return false
	}
	c.lose, c.pass, c.hold = true, n, hold
	c.losing = n == 0
	return c.losing
}

// admit returns the part of data, bytes from the server, that the client may
// have: all of it, unless a reply loss starts inside it or has started. When the
// loss starts in this call, start is true and hold is its time to the reset.
func (c *proxyConn) admit(data []byte) (out []byte, start bool, hold time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.losing {
		return nil, false, 0
	}
	i := 0
	for i < len(data) && (!c.lose || c.pass > 0) {
		n, end := c.frames.next(data[i:])
		i += n
		if end && c.lose {
			c.pass--
		}
	}
	if !c.lose || c.pass > 0 {
		return data, false, 0
	}
	c.losing = true
	return data[:i], true, c.hold
}

func (c *proxyConn) isLosing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.losing
}

// frameCounter follows the frames of a ZooKeeper byte stream: each a 4-byte
// big-endian length, then that many bytes.
type frameCounter struct {
	hdr   int    // bytes of the current frame's length read (0-4)
	size  uint32 // the length, as read so far
	left  int64  // bytes of the frame's body still to come, once its length is read
	count int    // frames ended so far
}

// next consumes data up to the end of the current frame at most. It returns the
// bytes it took and whether the frame ended there.
func (f *frameCounter) next(data []byte) (int, bool) {
	i := 0
	for ; f.hdr < 4; f.hdr++ {
		if i == len(data) {
			return i, false
		}
		f.size = f.size<<8 | uint32(data[i])
		i++
		if f.hdr == 3 {
			f.left = max(int64(int32(f.size)), 0)
		}
	}
	take := min(int64(len(data)-i), f.left)
	i += int(take)
	f.left -= take
	if f.left > 0 {
		return i, false
	}
	f.hdr, f.size = 0, 0
	f.count++
	return i, true
}

func (c *proxyConn) kill() {
	c.once.Do(func() {
		close(c.dead)
		_ = c.client.Close()
		_ = c.server.Close()
	})
}

func (c *proxyConn) reset() {
	_ = c.client.SetLinger(0)
	_ = c.server.SetLinger(0)
	c.kill()
}

type chunk struct {
	data []byte
	at   time.Time
}

func (p *Proxy) handle(client *net.TCPConn) {
	defer p.wg.Done()
	d := net.Dialer{Timeout: 5 * time.Second}
	sc, err := d.Dial("tcp", p.target)
	if err != nil {
		_ = client.Close()
		return
	}
	c := &proxyConn{client: client, server: sc.(*net.TCPConn), dead: make(chan struct{})}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		c.kill()
		return
	}
	p.conns[c] = struct{}{}
	if len(p.rwOld) > 0 {
		c.rwOld, c.rwNew = p.rwOld, p.rwNew
	}
	var armed *armedLoss
	if len(p.armed) > 0 {
		armed = p.armed[0]
		p.armed = p.armed[1:]
		if c.setLoss(armed.n, armed.hold) {
			p.resetAfter(c, armed.hold)
		}
	}
	p.mu.Unlock()

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(c, c.client, c.server, false) }()
	go func() { defer wg.Done(); p.pipe(c, c.server, c.client, true) }()
	wg.Wait()
	c.kill()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	if armed != nil {
		close(armed.done)
	}
}

// pipe forwards src to dst until src ends, honouring the blackhole gate and the delay,
// and, for the server's replies, a reply loss; it half-closes dst when src reaches EOF
// (unless the replies are being lost), and kills the pair on a write error.
func (p *Proxy) pipe(c *proxyConn, src, dst *net.TCPConn, replies bool) {
	ch := make(chan chunk, 64)
	var rwg sync.WaitGroup
	rwg.Add(1)
	go func() {
		defer rwg.Done()
		defer close(ch)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				select {
				case ch <- chunk{buf[:n], time.Now()}:
				case <-c.dead:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	defer rwg.Wait()
	for {
		var ck chunk
		var ok bool
		select {
		case ck, ok = <-ch:
		case <-c.dead:
			return
		}
		if !ok {
			// src ended: pass the close on once the gate is open (after the
			// start of a frame still being reassembled for RewriteReplies); a
			// connection losing its replies waits for its reset instead.
			if !p.waitOpen(c) {
				return
			}
			if replies && len(c.rwBuf) > 0 && !p.sendReplies(c, dst, c.rwBuf) {
				return
			}
			if replies && c.isLosing() {
				return
			}
			_ = dst.CloseWrite()
			return
		}
		if !p.waitOpen(c) {
			return
		}
		if _, delay := p.gate(); delay > 0 {
			if wait := time.Until(ck.at.Add(delay)); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-c.dead:
					t.Stop()
					return
				}
			}
		}
		data := ck.data
		if replies {
			if len(c.rwOld) > 0 {
				if data = c.rewrite(data); len(data) == 0 {
					continue
				}
			}
			if !p.sendReplies(c, dst, data) {
				return
			}
			continue
		}
		if _, err := dst.Write(data); err != nil {
			c.kill()
			return
		}
	}
}

// sendReplies writes data, the server's bytes, to dst, the client, as the
// connection's reply faults allow. False when dst failed.
func (p *Proxy) sendReplies(c *proxyConn, dst *net.TCPConn, data []byte) bool {
	data, start, hold := c.admit(data)
	if start {
		p.resetAfter(c, hold)
	}
	if len(data) == 0 {
		return true
	}
	return p.forwardReplies(c, dst, data)
}

// waitOpen blocks while the proxy is black-holed; false when the connection died.
func (p *Proxy) waitOpen(c *proxyConn) bool {
	for {
		open, _ := p.gate()
		select {
		case <-open:
			return true
		case <-c.dead:
			return false
		}
	}
}

// ReplyFault is a fault on one reply to a client request, set by
// [Proxy.LoseRequestReply] or [Proxy.HoldRequestReply].
type ReplyFault struct {
	p    *Proxy
	hit  chan struct{}
	once sync.Once
	lose bool
	hold time.Duration

	mu    sync.Mutex
	xid   int32
	conns []*proxyConn
	freed bool
}

// Hit returns a channel closed once the fault has taken its reply: the
// reply is then lost or held, and everything the server sends after it on
// that connection too. It never closes if no connection gets that far.
func (f *ReplyFault) Hit() <-chan struct{} { return f.hit }

// Xid returns the xid of the reply the fault took (0 before [ReplyFault.Hit]).
func (f *ReplyFault) Xid() int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.xid
}

// Release delivers, in order, what a [Proxy.HoldRequestReply] fault holds,
// and lets the connection's bytes flow again; a fault that has not taken its
// reply yet is cancelled. It does nothing to a loss. Idempotent. A fault
// set while this one holds counts the replies after the held one, the
// held ones included: hold a reply, set the next fault, then release.
func (f *ReplyFault) Release() {
	f.mu.Lock()
	f.freed = true
	conns := f.conns
	f.mu.Unlock()
	if f.lose {
		return
	}
	for _, c := range conns {
		c.release(f)
	}
}

// connFault is a ReplyFault's count on one connection.
type connFault struct {
	f    *ReplyFault
	left int // request replies still to come, the fault's own included
}

// LoseRequestReply makes every live connection lose the k-th reply to a
// client request from now on (k < 1 counts as 1), and everything the server
// sends after it; hold after the loss starts, that connection is reset, as with
// [Proxy.LoseReplies]. Only replies to requests count: a ZooKeeper reply
// frame whose header's xid is positive; pings (xid -2), watch notifications
// (xid -1), the SetWatches and auth replies and a connection's connect
// response do not. A reply whose first bytes were delivered before the call
// does not count. Connections accepted after the call are not affected.
func (p *Proxy) LoseRequestReply(k int, hold time.Duration) *ReplyFault {
	return p.requestFault(&ReplyFault{p: p, hit: make(chan struct{}), lose: true, hold: hold}, k)
}

// HoldRequestReply makes every live connection hold the k-th reply to a
// client request from now on (counted as by [Proxy.LoseRequestReply]), and
// everything the server sends after it, in order, until
// [ReplyFault.Release]: the request has been executed by the server, and the
// client does not know yet. The client's pings go unanswered meanwhile, so a
// hold longer than its read timeout ends the connection. The client's
// requests still reach the server.
func (p *Proxy) HoldRequestReply(k int) *ReplyFault {
	return p.requestFault(&ReplyFault{p: p, hit: make(chan struct{})}, k)
}

func (p *Proxy) requestFault(f *ReplyFault, k int) *ReplyFault {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return f
	}
	for c := range p.conns {
		c.mu.Lock()
		c.fault = &connFault{f: f, left: max(k, 1)}
		c.mu.Unlock()
		f.conns = append(f.conns, c)
	}
	return f
}

// RequestReplies returns the number of replies to client requests (counted
// as by [Proxy.LoseRequestReply]) the proxy has delivered to its clients, on
// every connection since it started.
func (p *Proxy) RequestReplies() int {
	return int(p.requestReplies.Load())
}

// forwardReplies writes data, the server's bytes, to dst, the client, as
// the connection's request-reply fault allows. False when dst failed.
func (p *Proxy) forwardReplies(c *proxyConn, dst *net.TCPConn, data []byte) bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	out, lost := c.admitRequests(p, data)
	if lost != nil {
		p.resetAfter(c, lost.hold)
	}
	if len(out) == 0 {
		return true
	}
	if _, err := dst.Write(out); err != nil {
		c.kill()
		return false
	}
	return true
}

// admitRequests returns the part of data the client may have now. It keeps
// a frame's first bytes back until its xid is known (to count it, and to
// let a fault take it), and keeps what follows a held reply. When a loss starts here, it returns
// its fault (the caller schedules the reset).
func (c *proxyConn) admitRequests(p *Proxy, data []byte) (out []byte, lost *ReplyFault) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holding != nil {
		c.held = append(c.held, data...)
		return nil, nil
	}
	if len(c.pend) > 0 {
		data = append(c.pend, data...)
		c.pend = nil
	}
	i := 0
	for i < len(data) {
		if c.replies.hdr == 0 && c.replies.count > 0 {
			// A frame starts: read its length and xid before passing it.
			if len(data)-i < 4 {
				c.pend = append([]byte(nil), data[i:]...)
				return data[:i], nil
			}
			if size := int32(binary.BigEndian.Uint32(data[i:])); size >= 4 {
				if len(data)-i < 8 {
					c.pend = append([]byte(nil), data[i:]...)
					return data[:i], nil
				}
				if xid := int32(binary.BigEndian.Uint32(data[i+4:])); xid > 0 {
					if f := c.take(xid); f != nil {
						if f.lose {
							c.losing = true
							return data[:i], f
						}
						c.holding = f
						c.held = append([]byte(nil), data[i:]...)
						return data[:i], nil
					}
					p.requestReplies.Add(1)
				}
			}
		}
		n, _ := c.replies.next(data[i:])
		i += n
	}
	return data, nil
}

// take counts the request reply xid against c's fault and returns the
// fault when it takes this reply. The caller holds c.mu.
func (c *proxyConn) take(xid int32) *ReplyFault {
	cf := c.fault
	if cf == nil {
		return nil
	}
	if cf.left--; cf.left > 0 {
		return nil
	}
	c.fault = nil
	if !cf.f.take(xid) {
		return nil
	}
	return cf.f
}

// take reports whether the fault takes the reply xid: false when it was
// released first or took one already on another connection.
func (f *ReplyFault) take(xid int32) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.freed || f.xid != 0 {
		return false
	}
	f.xid = xid
	f.once.Do(func() { close(f.hit) })
	return true
}

// release delivers what f holds on c.
func (c *proxyConn) release(f *ReplyFault) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	if c.fault != nil && c.fault.f == f {
		c.fault = nil
	}
	if c.holding != f {
		c.mu.Unlock()
		return
	}
	held := c.held
	c.holding, c.held = nil, nil
	// The held reply passes; the frames after it are counted again, against
	// a fault set meanwhile.
	n, _ := c.replies.next(held)
	f.p.requestReplies.Add(1)
	c.mu.Unlock()
	out, lost := c.admitRequests(f.p, held[n:])
	if lost != nil {
		f.p.mu.Lock()
		if !f.p.closed {
			f.p.resetAfter(c, lost.hold)
		}
		f.p.mu.Unlock()
	}
	out = append(held[:n:n], out...)
	if _, err := c.client.Write(out); err != nil {
		c.kill()
	}
}
