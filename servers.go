package zkrecipes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Resolver looks up the addresses of a host name. *net.Resolver
// satisfies it; a test or a split-horizon set-up plugs in its own with
// WithResolver. LookupHost returns the addresses as text (IPv4 or IPv6
// literals) or an error; it must return once ctx ends.
type Resolver interface {
	LookupHost(ctx context.Context, host string) (addrs []string, err error)
}

// lookupTimeout bounds each lookup of a server's name.
const lookupTimeout = 3 * time.Second

// WithResolver sets the resolver of the server names Connect is given.
// Names travel as written to WithTLS (which verifies the certificate
// against the name) and WithSASL (a Kerberos principal names the host):
// a name is resolved at each connection attempt, with a lookup bounded by
// 3s, and its addresses are dialled in random order until one answers
// (through WithDialer, which is given the address). An IP literal is not
// looked up. A name that does not resolve is skipped, logged once at Warn
// with the reason, and tried again at the next round over the servers: a
// name that comes back is used. Only Connect uses it: NewSession refuses
// it with ErrConnectOnlyOption. Default:
// net.DefaultResolver, the system's resolver as net.Dial uses it.
func WithResolver(r Resolver) SessionOption {
	return func(c *sessionConfig) {
		if r == nil {
			c.fail(invalidArg("nil resolver"))
			return
		}
		c.resolver = r
		c.connectOnly("WithResolver")
	}
}

// normalizeServers returns servers as go-zookeeper dials them (a missing
// port is 2181), or ErrInvalidArgument for an entry that is not
// host:port.
func normalizeServers(servers []string) ([]string, error) {
	if len(servers) == 0 {
		return nil, invalidArg("empty server list")
	}
	out := make([]string, 0, len(servers))
	for _, s := range servers {
		bad := func(why string) error {
			return invalidArg("bad server address %q (want host:port): %s", s, why)
		}
		if strings.TrimSpace(s) == "" || strings.ContainsAny(s, " \t\r\n/") {
			return nil, bad("empty, or a space or slash in it")
		}
		if !strings.Contains(s, ":") {
			s = net.JoinHostPort(s, strconv.Itoa(zk.DefaultPort))
		}
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			return nil, bad(err.Error())
		}
		if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
			return nil, bad("port must be 1 to 65535")
		}
		if host == "" {
			return nil, bad("no host")
		}
		out = append(out, s)
	}
	return out, nil
}

// serverList is the zk.HostProvider of Connect's Sessions: it yields the
// servers as written (host:port), in the order Init is given them
// (zk.Connect shuffles the list once before, as the Java client's
// StaticHostProvider does). Resolving is left to its dialer, at each
// connection attempt, which shuffles a name's addresses. It also keeps,
// per server, why its latest attempt failed and whether that was a
// refusal (see refuse).
//
// go-zookeeper calls Init once, then Next before each dial (from its one
// connecting goroutine) and Connected after each handshake; Next's
// retryStart (true once every server was tried since the last Connected)
// makes it sleep a second before dialling.
type serverList struct {
	log     *slog.Logger
	shuffle func([]string)  // of a name's addresses
	closed  <-chan struct{} // the Session's closedCh: it ends a lookup under way

	mu         sync.Mutex
	given      []string         // as the caller gave them (normalised, each once): the order of reports
	order      []string         // the order of attempts
	curr, last int              // as zk.DNSHostProvider's: last is where the last round started
	refused    map[string]bool  // the server's latest attempt was refused (retrying it cannot help)
	reasons    map[string]error // why the server's latest failed attempt failed; nil: none since it last connected
	unresolved map[string]bool  // the name did not resolve at its latest attempt, and was logged
	conn       net.Conn         // the latest connection the stack opened (recorder), maybe closed since
	connServer string           // the server conn was dialled for, as written
}

func newServerList(given []string, log *slog.Logger, closed <-chan struct{}) *serverList {
	var uniq []string
	for _, s := range given {
		if !slices.Contains(uniq, s) {
			uniq = append(uniq, s)
		}
	}
	return &serverList{
		log:        log,
		closed:     closed,
		shuffle:    func(s []string) { rand.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] }) },
		given:      uniq,
		refused:    map[string]bool{},
		reasons:    map[string]error{},
		unresolved: map[string]bool{},
	}
}

// Init takes the servers in the order given: zk.Connect has shuffled
// them. It does no lookup, so it never fails on a name. A server listed
// twice is tried twice a round, as go-zookeeper's own provider does.
func (p *serverList) Init(servers []string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.order = slices.Clone(servers)
	if len(p.order) == 0 {
		return invalidArg("empty server list")
	}
	p.curr, p.last = -1, -1
	return nil
}

// Len returns the number of servers.
func (p *serverList) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.order)
}

// Next returns the next server to try, as written, and whether every
// server was tried since the last Connected. It starts a new attempt at
// that server: its last refusal is forgotten (its reason is kept until
// the attempt fails or connects).
func (p *serverList) Next() (server string, retryStart bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.curr = (p.curr + 1) % len(p.order)
	retryStart = p.curr == p.last
	if p.last == -1 {
		p.last = 0
	}
	server = p.order[p.curr]
	delete(p.refused, server)
	return server, retryStart
}

// Connected marks the current server as the start of the next round.
func (p *serverList) Connected() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = p.curr
	delete(p.reasons, p.order[p.curr])
}

// failed records why an attempt at server failed.
func (p *serverList) failed(server string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reasons[server] = err
}

// refuse records that server refused the Session for a reason retrying
// cannot mend (see secure.go). It returns the error that ends the Session
// once every server's latest attempt was refused, nil until then.
func (p *serverList) refuse(server string, err error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refused[server] = true
	p.reasons[server] = err
	for _, s := range p.order {
		if !p.refused[s] {
			return nil
		}
	}
	return p.errorLocked(nil)
}

// connectError returns the error of a Connect that ctx (whose error is
// cause) ended before any server accepted it.
func (p *serverList) connectError(cause error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.errorLocked(cause)
}

func (p *serverList) errorLocked(cause error) *ConnectError {
	e := &ConnectError{Err: cause, Servers: make([]ServerError, 0, len(p.given))}
	for _, s := range p.given {
		e.Servers = append(e.Servers, ServerError{Server: s, Err: p.reasons[s]})
	}
	return e
}

// resolved reports whether server's name resolved at this attempt, and
// logs a name that stops (or starts again) resolving, once per change.
func (p *serverList) resolved(server string, err error) {
	p.mu.Lock()
	was := p.unresolved[server]
	p.unresolved[server] = err != nil
	p.mu.Unlock()
	switch {
	case err != nil && !was:
		p.log.Warn("zkrecipes: server name does not resolve; skipping it, and trying it again each round", "server", server, "err", err)
	case err == nil && was:
		p.log.Info("zkrecipes: server name resolves again", "server", server)
	}
}

// dialer returns the bottom of Connect's dialer stack: from a server as
// written (host:port) to a connection. It resolves the host with r, each
// lookup bounded by lookupTimeout and ended by the Session's Close, and
// dials the addresses in random order with dial until one answers. An IP
// literal is dialled as it is.
func (p *serverList) dialer(r Resolver, dial dialFunc) dialFunc {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		host, port, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		if net.ParseIP(host) != nil {
			return dial(network, address, timeout)
		}
		ctx, cancel := ctxUntil(p.closed)
		ctx, stop := context.WithTimeout(ctx, lookupTimeout)
		addrs, err := r.LookupHost(ctx, host)
		stop()
		cancel()
		if err == nil && len(addrs) == 0 {
			err = errors.New("no address")
		}
		if err != nil {
			err = fmt.Errorf("zkrecipes: resolve %s: %w", host, err)
		}
		p.resolved(address, err)
		if err != nil {
			return nil, err
		}
		addrs = slices.Clone(addrs) // the resolver's: a caching one may share it
		p.shuffle(addrs)
		var errs []error
		for _, a := range addrs {
			c, err := dial(network, net.JoinHostPort(a, port), timeout)
			if err == nil {
				return c, nil
			}
			errs = append(errs, err)
		}
		return nil, addrErrors(errs)
	}
}

// addrErrors is why every address of a name failed. It matches each, and
// reads on one line, "; " between them, as a ConnectError's message does
// (errors.Join would put each on a line of its own).
type addrErrors []error

func (e addrErrors) Error() string {
	s := make([]string, len(e))
	for i, err := range e {
		s[i] = err.Error()
	}
	return strings.Join(s, "; ")
}

func (e addrErrors) Unwrap() []error { return e }

// recorder wraps the top of the dialer stack: a failed dial is the
// server's reason in a ConnectError; a connection's failed write closes it
// (quietWriteConn). A connection to a server that left
// the list while it was dialled (update ran between Next and the dial's
// end) is closed and fails, so that go-zookeeper goes on to the next.
func (p *serverList) recorder(dial dialFunc) dialFunc {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := dial(network, address, timeout)
		if err != nil {
			p.failed(address, err)
			return nil, err
		}
		c = quietWriteConn{c} // zkconn.go
		p.mu.Lock()
		gone := mustMove(p.given, address, c.RemoteAddr().String())
		if !gone {
			p.conn, p.connServer = c, address
		}
		p.mu.Unlock()
		if gone {
			_ = c.Close()
			err = fmt.Errorf("zkrecipes: %s left the ensemble while it was dialled", address)
			p.failed(address, err)
			return nil, err
		}
		return c, nil
	}
}

// update replaces the servers with next (normalised; the ensemble's
// members, see ensembletrack.go) as the Java client's
// StaticHostProvider.updateServerList does, without its load balancing:
// the new list is tried in a new random order; a Session on a server that
// stays keeps its connection and goes on from there; one on a server that
// left is moved off it: update closes the connection under go-zookeeper,
// which dials the next server of the new list and resumes the same
// session there. It reports whether the list changed and whether it moved.
func (p *serverList) update(next []string) (changed, moved bool) {
	next = slices.Compact(slices.Sorted(slices.Values(next)))
	p.mu.Lock()
	if len(next) == 0 || slices.Equal(next, slices.Sorted(slices.Values(p.given))) {
		p.mu.Unlock()
		return false, false
	}
	var cur, remote string
	if p.conn != nil {
		cur, remote = p.connServer, p.conn.RemoteAddr().String()
	}
	order := slices.Clone(next)
	p.shuffle(order)
	p.given, p.order = next, order
	drop := mustMove(next, cur, remote)
	if i := slices.Index(order, cur); !drop && i >= 0 {
		p.curr, p.last = i, i
	} else if i := slices.IndexFunc(order, func(s string) bool { return sameServer(s, cur, remote) }); !drop && i >= 0 {
		p.curr, p.last = i, i
	} else {
		p.curr, p.last = -1, -1 // the next attempt starts the new list
	}
	var c net.Conn
	if drop {
		c, p.conn = p.conn, nil
	}
	p.mu.Unlock()
	if c != nil {
		_ = c.Close() // go-zookeeper reconnects, with the session, to the next server (Next)
	}
	return true, c != nil
}

// mustMove reports whether a Session connected to server cur (as
// written; "" when it has no connection), at address remote (ip:port),
// must leave it for the server list next: when cur is not in it. As the
// Java client does, a server is in it when an entry names it as written
// or has its address.
func mustMove(next []string, cur, remote string) bool {
	if cur == "" {
		return false
	}
	return !slices.ContainsFunc(next, func(s string) bool { return sameServer(s, cur, remote) })
}

// sameServer reports whether entry (host:port) is the server dialled as
// cur (host:port as written) at address remote (ip:port, may be "").
func sameServer(entry, cur, remote string) bool {
	if entry == cur {
		return true
	}
	e, err := netip.ParseAddrPort(entry)
	if err != nil {
		return false
	}
	for _, x := range []string{cur, remote} {
		if a, err := netip.ParseAddrPort(x); err == nil && a.Addr().Unmap() == e.Addr().Unmap() && a.Port() == e.Port() {
			return true
		}
	}
	return false
}
