package secure_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// Names travel as written to TLS and SASL, and are resolved at each
// connection attempt, at the bottom of the dialer stack (issue 39 defect 2,
// issue 40 item 1). Every address these tests dial is on 127.0.0.0/8:
// made-up names are .invalid, and dialLog refuses (never dials) any other
// address. Tests with a plugged resolver also require that none was given;
// with the system's resolver, localhost may also resolve to ::1 elsewhere.

// dialLog is a WithDialer that dials only loopback addresses and records
// every address it is given, in order.
type dialLog struct {
	mu        sync.Mutex
	addrs     []string
	offLimits []string // addresses refused for not being on 127.0.0.0/8
}

func (d *dialLog) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	host, _, err := net.SplitHostPort(address)
	ip := net.ParseIP(host)
	d.mu.Lock()
	d.addrs = append(d.addrs, address)
	if err != nil || ip == nil || ip.To4() == nil || !ip.IsLoopback() {
		d.offLimits = append(d.offLimits, address)
		d.mu.Unlock()
		return nil, fmt.Errorf("test dialer: %q is not on 127.0.0.0/8", address)
	}
	d.mu.Unlock()
	return net.DialTimeout(network, address, timeout)
}

func (d *dialLog) option() zr.SessionOption { return zr.WithDialer(d.dial) }

func (d *dialLog) dialled() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.addrs)
}

func (d *dialLog) requireLoopbackOnly(t *testing.T) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	require.Empty(t, d.offLimits, "addresses off 127.0.0.0/8 were given to the dialer")
}

// mapResolver resolves the names it holds, and nothing else.
type mapResolver struct {
	mu    sync.Mutex
	names map[string][]string
	asked []string
}

func (r *mapResolver) LookupHost(ctx context.Context, host string) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, host)
	if a, ok := r.names[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (r *mapResolver) lookups() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.asked)
}

func port(t *testing.T, addr string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	return p
}

// A TLS server whose certificate names localhost only (no IP SAN, as
// certificates issued for an ensemble's host names are) accepts a Session
// given "localhost:<port>": the certificate is checked against the name as
// written, not the address it resolved to.
func TestTLSVerifiesTheCertificateAgainstTheNameAsWritten(t *testing.T) {
	srv := zktest.StartSecureServer(t, zktest.WithTLS(zktest.ClientAuthNeed), zktest.WithServerCertHosts("localhost"))
	d := &dialLog{}
	s := connect(t, "localhost:"+port(t, srv.TLSAddr), zr.WithTLS(srv.TLS().ClientConfig(true)), d.option())
	exerciseRecipes(t, s, testPath(t))
	require.Contains(t, d.dialled(), "127.0.0.1:"+port(t, srv.TLSAddr), "the dialer is given the resolved address")

	// The same certificate is refused for the address: it names no IP.
	took, err := connectErr(t, srv.TLSAddr, zr.WithTLS(srv.TLS().ClientConfig(true)))
	require.ErrorIs(t, err, zr.ErrTLSUntrusted)
	require.Less(t, took, refuseBound)
}

// A resolver of the caller's (split-horizon DNS, say) maps a made-up name to
// the server; TLS verifies the certificate issued for that name.
func TestConnectResolvesNamesWithAPluggedResolverAndTLSSeesTheName(t *testing.T) {
	srv := zktest.StartSecureServer(t, zktest.WithTLS(zktest.ClientAuthNeed), zktest.WithServerCertHosts("zk1.zkrecipes.invalid"))
	r := &mapResolver{names: map[string][]string{"zk1.zkrecipes.invalid": {"127.0.0.1"}}}
	d := &dialLog{}
	s := connect(t, "zk1.zkrecipes.invalid:"+port(t, srv.TLSAddr),
		zr.WithResolver(r), zr.WithTLS(srv.TLS().ClientConfig(true)), d.option())
	exerciseRecipes(t, s, testPath(t))
	require.Contains(t, r.lookups(), "zk1.zkrecipes.invalid")
	require.Equal(t, "zk1.zkrecipes.invalid:"+port(t, srv.TLSAddr), s.Conn().Server(), "the server as written")
	d.requireLoopbackOnly(t)
}

// A name that does not resolve, beside a server that answers, is skipped
// and reported once (issue 40's first report: Connect failed after 1 ms
// with "no such host"). The resolver is the test's, which knows no name (a
// test sends no query off this machine); nothing but 127.0.0.1 is dialled.
// The order is shuffled, so Connect runs until the bad name came first at
// least once.
func TestConnectSkipsANameThatDoesNotResolve(t *testing.T) {
	srv := noSASL.get(t)
	d := &dialLog{}
	skipped := 0
	for run := 0; run < 12 && skipped < 2; run++ {
		logs := &zktest.LogBuffer{}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		s, err := zr.Connect(ctx, []string{"zk-gone.invalid:2181", srv.Addr}, zr.WithResolver(&mapResolver{}),
			zr.WithLogger(slog.New(slog.NewTextHandler(logs, nil))), d.option())
		cancel()
		require.NoError(t, err, "run %d", run)
		require.Equal(t, srv.Addr, s.Conn().Server())
		_ = s.Close()
		if n := logs.Count("server name does not resolve"); n > 0 {
			require.Equal(t, 1, n, "reported once")
			require.Contains(t, logs.String(), "zk-gone.invalid")
			skipped++
		}
	}
	require.Positive(t, skipped, "the unresolvable name never came first in 12 shuffled runs")
}

// When no name resolves, Connect fails within ctx with an error that names
// every server and why it failed.
func TestConnectFailsWithEachServersReasonWhenNoNameResolves(t *testing.T) {
	r := &mapResolver{}
	d := &dialLog{}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	s, err := zr.Connect(ctx, []string{"zk1.zkrecipes.invalid:2181", "zk2.zkrecipes.invalid:2181"}, zr.WithResolver(r), d.option())
	if err == nil {
		_ = s.Close()
	}
	require.Error(t, err)
	require.Less(t, time.Since(start), 10*time.Second, "within ctx")
	require.ErrorIs(t, err, zr.ErrNoServerAccepted)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	var ce *zr.ConnectError
	require.ErrorAs(t, err, &ce)
	require.Len(t, ce.Servers, 2)
	for i, name := range []string{"zk1.zkrecipes.invalid", "zk2.zkrecipes.invalid"} {
		require.Equal(t, name+":2181", ce.Servers[i].Server)
		var dnsErr *net.DNSError
		require.ErrorAs(t, ce.Servers[i].Err, &dnsErr, "server %d", i)
		require.Equal(t, name, dnsErr.Name)
		require.Contains(t, err.Error(), name+":2181: resolve "+name)
	}
	require.Empty(t, d.dialled(), "nothing resolved, nothing dialled")
	require.Subset(t, r.lookups(), []string{"zk1.zkrecipes.invalid", "zk2.zkrecipes.invalid"})
}

// twoCAs returns a client config trusting both servers' CAs and presenting
// b's client certificate, which a (another CA, ssl.clientAuth=need) refuses.
func twoCAs(a, b *zktest.SecureServer, cert bool) *tls.Config {
	pool := x509.NewCertPool()
	for _, s := range []*zktest.SecureServer{a, b} {
		pool.AppendCertsFromPEM(mustRead(s.TLS().CAFile))
	}
	c := b.TLS().ClientConfig(cert)
	c.RootCAs = pool
	return c
}

func mustRead(path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return b
}

// One server of the list refuses the Session's TLS client certificate
// (another CA), the other accepts it: Connect succeeds whichever comes
// first, since a refusal is final only once every server has refused
// (issue 39 defect 6b). The order is shuffled, so Connect runs until the
// refusing server came first at least once.
func TestTLSRefusalByOneServerIsNotFinalWhileAnotherAccepts(t *testing.T) {
	a := zktest.StartSecureServer(t, zktest.WithTLS(zktest.ClientAuthNeed))
	b := zktest.StartSecureServer(t, zktest.WithTLS(zktest.ClientAuthNeed))
	cfg := twoCAs(a, b, true)
	refusedFirst := 0
	for run := 0; run < 12 && refusedFirst < 2; run++ {
		d := &dialLog{}
		logs := &zktest.LogBuffer{}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		s, err := zr.Connect(ctx, []string{a.TLSAddr, b.TLSAddr}, zr.WithTLS(cfg), d.option(),
			zr.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
		cancel()
		require.NoError(t, err, "run %d", run)
		require.Equal(t, b.TLSAddr, s.Conn().Server())
		_, err = s.Conn().Sync("/")
		require.NoError(t, err)
		_ = s.Close()
		if slices.Index(d.dialled(), a.TLSAddr) == 0 {
			refusedFirst++
			require.Contains(t, logs.String(), "server refused the session; trying the other servers")
		}
		d.requireLoopbackOnly(t)
	}
	require.Positive(t, refusedFirst, "the refusing server never came first in 12 shuffled runs")
}

// When every server refuses (no client certificate, clientAuth=need),
// Connect fails at once, after one attempt at each, with an error that
// names each server and matches ErrTLSRefused.
func TestTLSRefusedByEveryServerFailsConnectOnceWithEachReason(t *testing.T) {
	a := tlsNeed.get(t)
	b := zktest.StartSecureServer(t, zktest.WithTLS(zktest.ClientAuthNeed))
	d := &dialLog{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	s, err := zr.Connect(ctx, []string{a.TLSAddr, b.TLSAddr}, zr.WithTLS(twoCAs(a, b, false)), d.option())
	if err == nil {
		_ = s.Close()
	}
	require.Error(t, err)
	require.Less(t, time.Since(start), refuseBound)
	require.NoError(t, ctx.Err(), "Connect must fail by itself, not wait for ctx: %v", err)
	require.ErrorIs(t, err, zr.ErrTLSRefused)
	require.ErrorIs(t, err, zr.ErrNoServerAccepted)
	var ce *zr.ConnectError
	require.ErrorAs(t, err, &ce)
	require.Len(t, ce.Servers, 2)
	for _, se := range ce.Servers {
		require.ErrorIs(t, se.Err, zr.ErrTLSRefused, se.Server)
	}
	require.ElementsMatch(t, []string{a.TLSAddr, b.TLSAddr}, d.dialled(), "one attempt at each")
}
