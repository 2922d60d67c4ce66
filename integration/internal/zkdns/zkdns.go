// Package zkdns is a DNS server on 127.0.0.1 whose records a test changes
// while it runs: names that do not resolve yet, names whose address moves
// from one server to another, names that go and come back. Point a
// client at it with [Server.Resolver], a *net.Resolver that asks this
// server and no other (zkrecipes.WithResolver takes it):
//
//	dns := zkdns.Start(t)
//	require.NoError(t, dns.Set("zk.zkrecipes.test", "127.0.0.1"))
//	s, err := zkrecipes.Connect(ctx, []string{"zk.zkrecipes.test:" + port},
//		zkrecipes.WithResolver(dns.Resolver()))
//
// It is internal to the integration module, which alone may depend on the
// DNS library it is built on (github.com/miekg/dns): the zktest module that
// users import stays free of it.
package zkdns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Errors of [Server.Set].
var (
	// ErrInvalidName: not a DNS name.
	ErrInvalidName = errors.New("zkdns: not a valid DNS name")
	// ErrInvalidAddress: not an IP literal, or not on loopback (tests
	// dial only 127.0.0.0/8 and ::1).
	ErrInvalidAddress = errors.New("zkdns: not a loopback IP literal")
)

// Server answers A and AAAA queries, over UDP and TCP on one port of
// 127.0.0.1, from records a test sets: a name set has the addresses last
// set for it (none: the name exists with no address), and any other name
// does not exist (NXDOMAIN). Answers carry a TTL of 0, so nothing caches
// them. Methods are safe for concurrent use.
type Server struct {
	addr string
	udp  *dns.Server
	tcp  *dns.Server
	wg   sync.WaitGroup
	once sync.Once

	mu      sync.Mutex
	records map[string][]netip.Addr // by canonical name (lower case, with the final dot)
	queries map[string]int
}

// Start starts a [Server] and registers tb.Cleanup to close it. It calls
// tb.Fatalf when no port can be had. Call it from the test goroutine only.
func Start(tb testing.TB) *Server {
	tb.Helper()
	s, err := Listen()
	if err != nil {
		tb.Fatalf("%v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// Listen starts a [Server] on 127.0.0.1, UDP and TCP on the same
// OS-chosen port. The caller must call [Server.Close].
func Listen() (*Server, error) {
	s := &Server{records: map[string][]netip.Addr{}, queries: map[string]int{}}
	var lastErr error
	for range 20 { // the UDP port may be taken for TCP: pick another
		pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("zkdns: listen udp: %w", err)
		}
		ln, err := net.Listen("tcp4", pc.LocalAddr().String())
		if err != nil {
			_ = pc.Close()
			lastErr = err
			continue
		}
		s.addr = pc.LocalAddr().String()
		s.udp = &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(s.serve)}
		s.tcp = &dns.Server{Listener: ln, Handler: dns.HandlerFunc(s.serve)}
		for _, srv := range []*dns.Server{s.udp, s.tcp} {
			started := make(chan struct{})
			srv.NotifyStartedFunc = func() { close(started) }
			errc := make(chan error, 1)
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				errc <- srv.ActivateAndServe()
			}()
			select {
			case <-started:
			case err := <-errc:
				_ = s.Close()
				return nil, fmt.Errorf("zkdns: serve: %w", err)
			}
		}
		return s, nil
	}
	return nil, fmt.Errorf("zkdns: no port free for both UDP and TCP: %w", lastErr)
}

// Addr returns the server's address, "127.0.0.1:port" (UDP and TCP).
func (s *Server) Addr() string { return s.addr }

// Resolver returns a resolver that asks this server, and no other: Go's
// own resolver (PreferGo), every query of it dialled to [Server.Addr].
// It still reads /etc/hosts first, as Go's resolver does: use names that
// are not there (under .test, say).
func (s *Server) Resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, s.addr)
	}}
}

// Set gives name the addresses addrs (IPv4 or IPv6 loopback literals),
// replacing those it had; with none, the name exists but has no address.
// It fails with ErrInvalidName or ErrInvalidAddress, changing nothing.
func (s *Server) Set(name string, addrs ...string) error {
	key, ok := canonical(name)
	if !ok {
		return fmt.Errorf("%w: %q", ErrInvalidName, name)
	}
	ips := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		ip, err := netip.ParseAddr(a)
		if err != nil || !ip.IsLoopback() {
			return fmt.Errorf("%w: %q", ErrInvalidAddress, a)
		}
		ips = append(ips, ip.Unmap())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[key] = ips
	return nil
}

// Remove makes name not exist (NXDOMAIN) from now on.
func (s *Server) Remove(name string) {
	key, _ := canonical(name)
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.records, key)
}

// Queries returns the number of queries for name answered so far, of any
// type (a Go resolver asks A and AAAA for each lookup).
func (s *Server) Queries(name string) int {
	key, _ := canonical(name)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries[key]
}

// Close stops the server and waits for its goroutines. It is idempotent.
func (s *Server) Close() error {
	var err error
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, srv := range []*dns.Server{s.udp, s.tcp} {
			if srv != nil {
				err = errors.Join(err, srv.ShutdownContext(ctx))
			}
		}
		s.wg.Wait()
	})
	return err
}

// canonical returns name in lower case with its final dot.
func canonical(name string) (string, bool) {
	if name == "" || name == "." {
		return "", false
	}
	if _, ok := dns.IsDomainName(name); !ok {
		return "", false
	}
	return strings.ToLower(dns.Fqdn(name)), true
}

func (s *Server) serve(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	if len(req.Question) != 1 {
		m.Rcode = dns.RcodeFormatError
		_ = w.WriteMsg(m)
		return
	}
	q := req.Question[0]
	key := strings.ToLower(q.Name)
	s.mu.Lock()
	s.queries[key]++
	ips, ok := s.records[key]
	s.mu.Unlock()
	if !ok {
		m.Rcode = dns.RcodeNameError
		_ = w.WriteMsg(m)
		return
	}
	hdr := dns.RR_Header{Name: q.Name, Class: dns.ClassINET, Ttl: 0}
	for _, ip := range ips {
		switch {
		case q.Qtype == dns.TypeA && ip.Is4():
			hdr.Rrtype = dns.TypeA
			m.Answer = append(m.Answer, &dns.A{Hdr: hdr, A: net.IP(ip.AsSlice())})
		case q.Qtype == dns.TypeAAAA && ip.Is6():
			hdr.Rrtype = dns.TypeAAAA
			m.Answer = append(m.Answer, &dns.AAAA{Hdr: hdr, AAAA: net.IP(ip.AsSlice())})
		}
	}
	_ = w.WriteMsg(m)
}
