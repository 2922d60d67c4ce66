package secure_test

import (
	"crypto/tls"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
)

func TestTLSWithClientCertificateRunsRecipesUnderX509ACL(t *testing.T) {
	srv := tlsNeed.get(t)
	m := srv.TLS()
	s := connect(t, srv.TLSAddr, zr.WithTLS(m.ClientConfig(true)),
		zr.WithACL([]zr.ACL{zr.X509ACL(m.ClientDN, zr.PermAll)}))
	exerciseRecipes(t, s, testPath(t))

	// The nodes are the certificate holder's: a plain-port session
	// (authenticated as bob) may not read them.
	b := connect(t, srv.Addr, bob())
	_, _, err := b.Conn().Get(testPath(t) + "/value")
	require.ErrorIs(t, err, zk.ErrNoAuth)
}

func TestTLSAndSASLTogetherHoldBothIdentities(t *testing.T) {
	srv := tlsNeed.get(t)
	m := srv.TLS()
	s := connect(t, srv.TLSAddr, zr.WithTLS(m.ClientConfig(true)), alice())
	p := testPath(t)
	// The test's own parent: other tests make "/t" through recipes, this one must not depend on them.
	if _, err := s.Conn().Create("/t", nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		require.NoError(t, err)
	}
	_, err := s.Conn().Create(p, nil, 0, []zk.ACL{
		{Perms: zk.PermAll, Scheme: "sasl", ID: "alice"},
	})
	require.NoError(t, err)
	_, err = s.Conn().Create(p+"/x509", nil, 0, []zk.ACL{
		{Perms: zk.PermAll, Scheme: "x509", ID: m.ClientDN},
	})
	require.NoError(t, err, "the session holds sasl:alice and x509:%s", m.ClientDN)
	_, _, err = s.Conn().Get(p + "/x509")
	require.NoError(t, err)
}

// ServerName comes from the dialled host: the certificate names
// 127.0.0.1 and localhost, nothing else.
func TestTLSVerifiesTheDialledHost(t *testing.T) {
	srv := tlsNeed.get(t)
	m := srv.TLS()
	_, port, err := net.SplitHostPort(srv.TLSAddr)
	require.NoError(t, err)
	connect(t, "localhost:"+port, zr.WithTLS(m.ClientConfig(true)))

	cfg := m.ClientConfig(true)
	cfg.ServerName = "zk.example" // not in the certificate
	took, err := connectErr(t, srv.TLSAddr, zr.WithTLS(cfg))
	require.ErrorIs(t, err, zr.ErrTLSUntrusted)
	require.Less(t, took, refuseBound)
}

func TestTLSWithoutClientCertificateFailsWithErrTLSRefusedOnce(t *testing.T) {
	srv := tlsNeed.get(t)
	var dials int
	dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
		dials++
		return net.DialTimeout(network, address, timeout)
	}
	took, err := connectErr(t, srv.TLSAddr, zr.WithTLS(srv.TLS().ClientConfig(false)), zr.WithDialer(dial))
	require.ErrorIs(t, err, zr.ErrTLSRefused)
	require.Less(t, took, refuseBound)
	require.Equal(t, 1, dials, "no redial after the server refused the handshake")
}

func TestTLSUntrustedServerCertificateFailsWithErrTLSUntrusted(t *testing.T) {
	srv := tlsNeed.get(t)
	cfg := &tls.Config{Certificates: srv.TLS().ClientConfig(true).Certificates} // system roots only
	took, err := connectErr(t, srv.TLSAddr, zr.WithTLS(cfg))
	require.ErrorIs(t, err, zr.ErrTLSUntrusted)
	require.Less(t, took, refuseBound)
}

// A TLS dialer of the caller's own (WithDialer) gets the same verdicts.
func TestTLSFailureOfCallersDialerIsReportedToo(t *testing.T) {
	srv := tlsNeed.get(t)
	cfg := srv.TLS().ClientConfig(false)
	cfg.ServerName = "127.0.0.1"
	dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
		return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, address, cfg)
	}
	_, err := connectErr(t, srv.TLSAddr, zr.WithDialer(dial))
	require.ErrorIs(t, err, zr.ErrTLSRefused)
}

// With ssl.clientAuth=want, a Session without a certificate is served
// (without the x509 id); one with a certificate holds it.
func TestTLSClientCertificateIsOptionalWhenServerOnlyWantsOne(t *testing.T) {
	srv := zktest.StartSecureServer(t, zktest.WithTLS(zktest.ClientAuthWant))
	m := srv.TLS()
	with := connect(t, srv.TLSAddr, zr.WithTLS(m.ClientConfig(true)))
	without := connect(t, srv.TLSAddr, zr.WithTLS(m.ClientConfig(false)))
	p := "/x509-only"
	_, err := with.Conn().Create(p, nil, 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "x509", ID: m.ClientDN}})
	require.NoError(t, err)
	_, _, err = with.Conn().Get(p)
	require.NoError(t, err)
	_, _, err = without.Conn().Get(p)
	require.ErrorIs(t, err, zk.ErrNoAuth)
}
