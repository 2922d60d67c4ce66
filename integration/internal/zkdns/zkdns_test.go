package zkdns_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/integration/internal/zkdns"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func lookup(t *testing.T, r *net.Resolver, name string) ([]string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addrs, err := r.LookupHost(ctx, name)
	slices.Sort(addrs)
	return addrs, err
}

func notFound(t *testing.T, err error) {
	t.Helper()
	var de *net.DNSError
	require.ErrorAs(t, err, &de)
	assert.True(t, de.IsNotFound, "want not found, got %v", err)
}

func TestRecordsSetChangeAndRemovedAreWhatTheResolverSees(t *testing.T) {
	s := zkdns.Start(t)
	r := s.Resolver()
	const name = "zk.zkrecipes.test"

	_, err := lookup(t, r, name)
	notFound(t, err)

	require.NoError(t, s.Set(name, "127.0.0.2", "::1", "127.0.0.3"))
	addrs, err := lookup(t, r, name)
	require.NoError(t, err)
	assert.Equal(t, []string{"127.0.0.2", "127.0.0.3", "::1"}, addrs)

	require.NoError(t, s.Set("ZK.zkrecipes.TEST.", "127.0.0.4")) // names are case-insensitive, the final dot optional
	addrs, err = lookup(t, r, name)
	require.NoError(t, err)
	assert.Equal(t, []string{"127.0.0.4"}, addrs)

	require.NoError(t, s.Set(name)) // exists, no address
	_, err = lookup(t, r, name)
	notFound(t, err)

	s.Remove(name)
	_, err = lookup(t, r, name)
	notFound(t, err)
	assert.GreaterOrEqual(t, s.Queries(name), 5, "each lookup asks the server")
}

func TestAnswersOverTCPToo(t *testing.T) {
	s := zkdns.Start(t)
	require.NoError(t, s.Set("tcp.zkrecipes.test", "127.0.0.5"))
	c := &dns.Client{Net: "tcp", Timeout: 10 * time.Second}
	m := new(dns.Msg)
	m.SetQuestion("tcp.zkrecipes.test.", dns.TypeA)
	in, _, err := c.Exchange(m, s.Addr())
	require.NoError(t, err)
	require.Len(t, in.Answer, 1)
	assert.Equal(t, "127.0.0.5", in.Answer[0].(*dns.A).A.String())
	assert.Zero(t, in.Answer[0].Header().Ttl, "answers must not be cached")
}

func TestSetRefusesBadNamesAndAddressesOffLoopback(t *testing.T) {
	s := zkdns.Start(t)
	for _, a := range []string{"10.0.0.1", "example.com", "", "2001:db8::1"} {
		err := s.Set("ok.zkrecipes.test", a)
		assert.True(t, errors.Is(err, zkdns.ErrInvalidAddress), "%q: %v", a, err)
	}
	for _, n := range []string{"", ".", "a..b"} {
		assert.ErrorIs(t, s.Set(n, "127.0.0.1"), zkdns.ErrInvalidName, "%q", n)
	}
	_, err := lookup(t, s.Resolver(), "ok.zkrecipes.test")
	notFound(t, err) // a refused Set changed nothing
}

func TestCloseIsIdempotentAndLeavesNoGoroutine(t *testing.T) {
	s, err := zkdns.Listen()
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
}
