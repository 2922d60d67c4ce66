package zktest

import (
	"errors"
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy is a TCP proxy on 127.0.0.1 in front of one loopback target, for injecting
// network faults between a client and one server: silence ([Proxy.Blackhole]),
// latency ([Proxy.SetDelay]) and connection resets ([Proxy.ResetAll]). Point a client
// at [Proxy.Addr] instead of the server. Bytes are never dropped or reordered: during
// a blackhole they wait in the proxy (and, beyond a small buffer, in the kernel), as
// TCP retransmission would deliver them after a healed partition. Methods are safe
// for concurrent use.
type Proxy struct {
	target string
	ln     net.Listener
	done   chan struct{} // closed by Close
	wg     sync.WaitGroup

	mu     sync.Mutex
	open   chan struct{} // closed while traffic flows; replaced by Blackhole
	delay  time.Duration
	conns  map[*proxyConn]struct{}
	closed bool
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
	t, err := loopbackAddr(target)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
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

// proxyConn is one client connection and its connection to the target.
type proxyConn struct {
	client, server *net.TCPConn
	dead           chan struct{}
	once           sync.Once
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
	p.mu.Unlock()

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(c, c.client, c.server) }()
	go func() { defer wg.Done(); p.pipe(c, c.server, c.client) }()
	wg.Wait()
	c.kill()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// pipe forwards src to dst until src ends, honouring the blackhole gate and the delay;
// it half-closes dst when src reaches EOF, and kills the pair on a write error.
func (p *Proxy) pipe(c *proxyConn, src, dst *net.TCPConn) {
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
			// src ended: pass the close on once the gate is open.
			if !p.waitOpen(c) {
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
		if _, err := dst.Write(ck.data); err != nil {
			c.kill()
			return
		}
	}
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
