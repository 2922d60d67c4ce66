package kerberos_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/kerberos"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// principalMech records the service principal each exchange asks for.
type principalMech struct {
	*kerberos.Mechanism
	mu     sync.Mutex
	asked  []string
	server []string
}

func (p *principalMech) Start(ctx context.Context, server string) (zr.SASLClient, []byte, error) {
	spn, err := p.ServicePrincipal(ctx, server)
	p.mu.Lock()
	p.asked = append(p.asked, spn)
	p.server = append(p.server, server)
	p.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	return p.Mechanism.Start(ctx, server)
}

// With no WithServiceHost, the mechanism asks for the principal of the
// server's host as written in Connect's list: "localhost:<port>" gets a
// ticket for zookeeper/localhost (the server's principal), not for
// zookeeper/127.0.0.1, the address the name resolved to, which the KDC
// does not know (KDC_ERR_S_PRINCIPAL_UNKNOWN).
func TestKerberosAsksForThePrincipalOfTheNameAsWritten(t *testing.T) {
	k, srv := setup(t)
	m, err := kerberos.New(kerberos.WithConfigFile(k.ConfigPath), kerberos.WithKeytab("alice", k.Keytab("alice")))
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	pm := &principalMech{Mechanism: m}
	_, port, err := net.SplitHostPort(srv.Addr)
	require.NoError(t, err)

	var offLimits []string // refused, never dialled (localhost may also be ::1 elsewhere)
	var mu sync.Mutex
	dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
		host, _, _ := net.SplitHostPort(address)
		if ip := net.ParseIP(host); ip == nil || ip.To4() == nil || !ip.IsLoopback() {
			mu.Lock()
			offLimits = append(offLimits, address)
			mu.Unlock()
			return nil, &net.AddrError{Err: "not on 127.0.0.0/8", Addr: address}
		}
		return net.DialTimeout(network, address, timeout)
	}
	s := connect(t, "localhost:"+port, zr.WithSASL(pm), zr.WithDialer(dial),
		zr.WithACL([]zr.ACL{zr.SASLACL(m.Principal(), zr.PermAll)}))
	p := testPath(t)
	_, err = s.Conn().Create(p, []byte("only alice"), zk.FlagEphemeral, []zk.ACL{{Perms: zk.PermAll, Scheme: "sasl", ID: m.Principal()}})
	require.NoError(t, err)
	data, _, err := s.Conn().Get(p)
	require.NoError(t, err, "readable only as sasl:%s", m.Principal())
	require.Equal(t, "only alice", string(data))

	pm.mu.Lock()
	defer pm.mu.Unlock()
	require.NotEmpty(t, pm.asked)
	for i := range pm.asked {
		require.Equal(t, zktest.KDCServicePrincipal, pm.asked[i])
		require.Equal(t, "localhost:"+port, pm.server[i], "the server as written")
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("addresses refused for being off 127.0.0.0/8 (never dialled): %v", offLimits)
}
