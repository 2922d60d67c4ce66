package zkrecipes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
)

// The provider satisfies go-zookeeper's contract.
var _ zk.HostProvider = (*serverList)(nil)

func TestNormalizeServersKeepsNamesAndRejectsWhatIsNotHostPort(t *testing.T) {
	got, err := normalizeServers([]string{"zk1.example.com:2281", "zk2", "[::1]:2181", "zk1.example.com:2281"})
	require.NoError(t, err)
	require.Equal(t, []string{"zk1.example.com:2281", "zk2:2181", "[::1]:2181", "zk1.example.com:2281"}, got)
	for _, bad := range []string{"", " ", "a b:1", "host:port", "host:0", "host:70000", ":2181", "::1", "zk/chroot:1"} {
		_, err := normalizeServers([]string{"ok:1", bad})
		require.ErrorIs(t, err, ErrInvalidArgument, "%q", bad)
	}
	_, err = normalizeServers(nil)
	require.ErrorIs(t, err, ErrInvalidArgument)
}

// testServerList returns a list whose dialer keeps a name's addresses in
// the order resolved, and the buffer it logs to.
func testServerList(given ...string) (*serverList, *bytes.Buffer) {
	var logs bytes.Buffer
	p := newServerList(given, slog.New(slog.NewTextHandler(&logs, nil)), nil)
	p.shuffle = func([]string) {}
	return p, &logs
}

// Next walks the list in rounds; retryStart is true once every server was
// tried since the last Connected, as in go-zookeeper's DNSHostProvider
// (whose loop sleeps a second then).
func TestServerListRoundsFollowGoZookeeperContract(t *testing.T) {
	p, _ := testServerList("a:1", "b:1", "c:1")
	require.NoError(t, p.Init([]string{"a:1", "b:1", "c:1"}))
	require.Equal(t, 3, p.Len())
	type step struct {
		server string
		retry  bool
	}
	next := func() step { s, r := p.Next(); return step{s, r} }
	require.Equal(t, []step{{"a:1", false}, {"b:1", false}, {"c:1", false}, {"a:1", true}, {"b:1", false}},
		[]step{next(), next(), next(), next(), next()})
	p.Connected() // on b
	require.Equal(t, []step{{"c:1", false}, {"a:1", false}, {"b:1", true}}, []step{next(), next(), next()})
}

// Init keeps the order it is given (zk.Connect shuffled it) and the
// duplicates in it.
func TestServerListInitKeepsTheOrderGivenAndDuplicates(t *testing.T) {
	p, _ := testServerList("a:1", "b:1")
	p.shuffle = func([]string) { t.Error("Init shuffled the servers") }
	require.NoError(t, p.Init([]string{"b:1", "a:1", "b:1", "a:1"}))
	require.Equal(t, 4, p.Len())
	var got []string
	for range 4 {
		s, _ := p.Next()
		got = append(got, s)
	}
	require.Equal(t, []string{"b:1", "a:1", "b:1", "a:1"}, got)
	require.ErrorIs(t, p.Init(nil), ErrInvalidArgument)
}

// The real shuffle moves a name's addresses: over many dials, the first
// dialled is not always the first resolved.
func TestServerListDialerShuffleMovesAddresses(t *testing.T) {
	p := newServerList([]string{"zk.test:1"}, slog.Default(), nil)
	r := fromMap(map[string][]string{"zk.test": {"127.0.0.1", "127.0.0.2", "127.0.0.3"}})
	firsts := map[string]bool{}
	d := p.dialer(r, func(network, address string, timeout time.Duration) (net.Conn, error) {
		firsts[address] = true
		c1, c2 := net.Pipe()
		_ = c2.Close()
		return c1, nil
	})
	for range 200 {
		c, err := d("tcp", "zk.test:1", time.Second)
		require.NoError(t, err)
		_ = c.Close()
	}
	require.Len(t, firsts, 3)
}

// A refusal is final once every server's latest attempt was refused; a
// new attempt at a server forgets its refusal.
func TestServerListRefusalIsFinalOnlyOnceEveryServerRefused(t *testing.T) {
	p, _ := testServerList("a:1", "b:1")
	require.NoError(t, p.Init([]string{"a:1", "b:1"}))
	refusedA := errors.New("a refused")
	refusedB := errors.New("b refused")

	s, _ := p.Next()
	require.Nil(t, p.refuse(s, refusedA))
	s, _ = p.Next()
	p.failed(s, errors.New("b unreachable")) // not a refusal: b may accept once back
	s, _ = p.Next()
	require.Equal(t, "a:1", s)
	require.Nil(t, p.refuse(s, refusedA))
	s, _ = p.Next()
	err := p.refuse(s, refusedB)
	require.Error(t, err)
	require.ErrorIs(t, err, ErrNoServerAccepted)
	require.ErrorIs(t, err, refusedA)
	require.ErrorIs(t, err, refusedB)
	require.NotErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, "zkrecipes: no server accepted the session (every server refused it): a:1: a refused; b:1: b refused", err.Error())

	// A server that accepts in between breaks the streak.
	q, _ := testServerList("a:1", "b:1")
	require.NoError(t, q.Init([]string{"a:1", "b:1"}))
	s, _ = q.Next()
	require.Nil(t, q.refuse(s, refusedA))
	_, _ = q.Next() // b accepts, then drops
	q.Connected()
	s, _ = q.Next()
	require.Nil(t, q.refuse(s, refusedA), "b's latest attempt was not refused")
}

func TestConnectErrorGivesEachServerInTheOrderGiven(t *testing.T) {
	p, _ := testServerList("b:1", "a:1", "c:1")
	require.NoError(t, p.Init([]string{"a:1", "b:1", "c:1"}))
	lookup := errors.New("lookup b: no such host")
	p.failed("b:1", lookup)
	p.failed("a:1", errors.New("zkrecipes: dial tcp a:1: connection refused"))
	err := p.connectError(context.DeadlineExceeded)
	var ce *ConnectError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, []ServerError{{"b:1", lookup}, {"a:1", ce.Servers[1].Err}, {"c:1", nil}}, ce.Servers)
	require.ErrorIs(t, err, ErrNoServerAccepted)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, lookup)
	require.Equal(t, "zkrecipes: no server accepted the session (context deadline exceeded): "+
		"b:1: lookup b: no such host; a:1: dial tcp a:1: connection refused; c:1: no session established", err.Error())
}

// fakeResolver is a Resolver made of a function.
type fakeResolver func(ctx context.Context, host string) ([]string, error)

func (f fakeResolver) LookupHost(ctx context.Context, host string) ([]string, error) {
	return f(ctx, host)
}

// fromMap answers from m; a name not in it does not resolve.
func fromMap(m map[string][]string) fakeResolver {
	return func(_ context.Context, host string) ([]string, error) {
		if a, ok := m[host]; ok {
			return a, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
}

// The dialer resolves the name as written at each attempt, dials each
// address until one answers, and dials an IP literal as it is; a name
// that does not resolve is logged once until it resolves again.
func TestServerListDialerResolvesAtEachAttemptAndLogsOnce(t *testing.T) {
	p, logs := testServerList("zk.test:2181")
	r := map[string][]string{}
	var dialled []string
	dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
		dialled = append(dialled, address)
		if address == "127.0.0.9:2181" {
			return nil, errors.New("refused")
		}
		c1, c2 := net.Pipe()
		_ = c2.Close()
		return c1, nil
	}
	d := p.dialer(fromMap(r), dial)

	for range 3 {
		_, err := d("tcp", "zk.test:2181", time.Second)
		require.ErrorContains(t, err, "zkrecipes: resolve zk.test: ")
		var dnsErr *net.DNSError
		require.ErrorAs(t, err, &dnsErr)
	}
	require.Empty(t, dialled)
	require.Equal(t, 1, strings.Count(logs.String(), "does not resolve"), logs.String())

	r["zk.test"] = []string{"127.0.0.9", "127.0.0.10"}
	c, err := d("tcp", "zk.test:2181", time.Second)
	require.NoError(t, err)
	_ = c.Close()
	require.Contains(t, dialled, "127.0.0.10:2181")
	require.Contains(t, logs.String(), "resolves again")

	delete(r, "zk.test")
	_, err = d("tcp", "zk.test:2181", time.Second)
	require.Error(t, err)
	require.Equal(t, 2, strings.Count(logs.String(), "does not resolve"), "logged again once it stopped resolving again")

	dialled = nil
	c, err = d("tcp", "127.0.0.1:2181", time.Second)
	require.NoError(t, err)
	_ = c.Close()
	require.Equal(t, []string{"127.0.0.1:2181"}, dialled, "an IP literal is not looked up")

	r["many.test"] = []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}
	p.shuffle = func(s []string) { slices.Reverse(s) }
	dialled = nil
	c, err = d("tcp", "many.test:1", time.Second)
	require.NoError(t, err)
	_ = c.Close()
	require.Equal(t, []string{"127.0.0.3:1"}, dialled, "the addresses are shuffled")
	require.Equal(t, []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}, r["many.test"], "on a copy: the resolver's slice is left alone")

	r["empty.test"] = []string{}
	_, err = d("tcp", "empty.test:1", time.Second)
	require.ErrorContains(t, err, "no address")
}

// When every address of a name fails, the error matches each failure and
// reads on one line, in a ConnectError too.
func TestServerListDialerFailureOfEveryAddressReadsOnOneLine(t *testing.T) {
	p, _ := testServerList("zk.test:1")
	r := fromMap(map[string][]string{"zk.test": {"127.0.0.1", "127.0.0.2"}})
	refused := errors.New("refused")
	d := p.recorder(p.dialer(r, func(network, address string, timeout time.Duration) (net.Conn, error) {
		return nil, fmt.Errorf("dial %s: %w", address, refused)
	}))
	_, err := d("tcp", "zk.test:1", time.Second)
	require.ErrorIs(t, err, refused)
	require.Equal(t, "dial 127.0.0.1:1: refused; dial 127.0.0.2:1: refused", err.Error())
	require.Equal(t, "zkrecipes: no server accepted the session (context deadline exceeded): "+
		"zk.test:1: dial 127.0.0.1:1: refused; dial 127.0.0.2:1: refused",
		p.connectError(context.DeadlineExceeded).Error())
}

// Each lookup's ctx has a deadline lookupTimeout away, and ends when the
// Session closes.
func TestServerListDialerBoundsEachLookupAndEndsItOnClose(t *testing.T) {
	closed := make(chan struct{})
	p := newServerList([]string{"slow.test:1"}, slog.Default(), closed)
	var deadline time.Time
	r := fakeResolver(func(ctx context.Context, host string) ([]string, error) {
		deadline, _ = ctx.Deadline()
		return nil, errors.New("nothing")
	})
	start := time.Now()
	_, _ = p.dialer(r, nil)("tcp", "slow.test:1", time.Second)
	require.False(t, deadline.IsZero(), "the lookup has a deadline")
	require.WithinDuration(t, start.Add(lookupTimeout), deadline, time.Second)

	looking := make(chan struct{})
	r = func(ctx context.Context, host string) ([]string, error) {
		close(looking)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	errc := make(chan error, 1)
	go func() {
		_, err := p.dialer(r, nil)("tcp", "slow.test:1", time.Second)
		errc <- err
	}()
	<-looking
	close(closed)
	err := <-errc
	require.ErrorIs(t, err, context.Canceled, "Close ended the lookup, not its deadline")
}

func TestWithResolverRejectsNil(t *testing.T) {
	_, err := buildConfig([]SessionOption{WithResolver(nil)})
	require.ErrorIs(t, err, ErrInvalidArgument)
	cfg, err := buildConfig(nil)
	require.NoError(t, err)
	require.Equal(t, net.DefaultResolver, cfg.resolver)
}

// The decision of the Java client's updateServerList: a Session moves
// only when its server left, whether the list names it as it was dialled
// or by its address.
func TestMustMoveOnlyWhenTheCurrentServerLeft(t *testing.T) {
	next := []string{"127.0.0.1:2181", "zk-2.zk-hs:2181", "[::1]:2183"}
	for _, c := range []struct {
		cur, remote string
		move        bool
	}{
		{"", "", false}, // not connected: the next attempt takes the new list
		{"127.0.0.1:2181", "127.0.0.1:2181", false},
		{"zk-2.zk-hs:2181", "10.1.2.3:2181", false},     // by name as written
		{"zk-9.zk-hs:2181", "127.0.0.1:2181", false},    // by the address the name resolved to
		{"[0:0:0:0:0:0:0:1]:2183", "[::1]:2183", false}, // another spelling of the address
		{"zk-3.zk-hs:2181", "10.1.2.4:2181", true},
		{"127.0.0.1:2182", "127.0.0.1:2182", true}, // same host, another port
	} {
		require.Equal(t, c.move, mustMove(next, c.cur, c.remote), "%+v", c)
	}
}

// update swaps in the new list in a new random order; on a server that
// stays, the Session goes on from there; off one that left, its connection
// is closed and the next attempt starts the new list.
func TestServerListUpdateKeepsAStayingServerAndDropsALeftOne(t *testing.T) {
	p, _ := testServerList("a:1", "b:1", "c:1")
	p.shuffle = func([]string) {}
	require.NoError(t, p.Init([]string{"a:1", "b:1", "c:1"}))
	server, _ := p.Next()
	c1 := &closeRecorder{remote: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 9), Port: 1}}
	_, err := p.recorder(func(string, string, time.Duration) (net.Conn, error) { return c1, nil })("tcp", server, time.Second)
	require.NoError(t, err)
	p.Connected()

	changed, moved := p.update([]string{"a:1", "c:1", "b:1"})
	require.False(t, changed, "the same servers in another order are no change")
	require.False(t, moved)

	changed, moved = p.update([]string{"e:1", "a:1", "d:1", "b:1", "c:1"})
	require.True(t, changed)
	require.False(t, moved, "a stays: the Session stays on it")
	require.Equal(t, 5, p.Len())
	next, _ := p.Next()
	require.Equal(t, "b:1", next, "it goes on after a, in the new list")
	require.False(t, c1.closed.Load(), "the connection is still open")
	p.mu.Lock()
	p.curr = 0 // on a again
	p.mu.Unlock()

	changed, moved = p.update([]string{"c:1", "d:1", "e:1"})
	require.True(t, changed)
	require.True(t, moved, "a left: the Session moves")
	require.True(t, c1.closed.Load(), "the connection to a is closed")
	var got []string
	for range 3 {
		s, retry := p.Next()
		require.False(t, retry, "no pause before the new list's first round")
		got = append(got, s)
	}
	require.Equal(t, []string{"c:1", "d:1", "e:1"}, got)
	var ce *ConnectError
	require.ErrorAs(t, p.connectError(nil), &ce)
	require.Len(t, ce.Servers, 3, "reports name the new servers")

	changed, _ = p.update(nil)
	require.False(t, changed, "an empty list changes nothing")
	require.Equal(t, 3, p.Len())
}

// closeRecorder is a connection that records its Close.
type closeRecorder struct {
	net.Conn
	remote net.Addr
	closed atomic.Bool
}

func (c *closeRecorder) RemoteAddr() net.Addr { return c.remote }
func (c *closeRecorder) Close() error         { c.closed.Store(true); return nil }

// A server that leaves the list while go-zookeeper dials it (update runs
// between Next and the dial's end) is not kept: its connection is closed
// and the dial fails, so that go-zookeeper goes on to the next server.
func TestServerListRefusesAConnectionToAServerThatLeftWhileItWasDialled(t *testing.T) {
	p, _ := testServerList("a:1", "b:1")
	p.shuffle = func([]string) {}
	require.NoError(t, p.Init([]string{"a:1", "b:1"}))
	server, _ := p.Next()
	require.Equal(t, "a:1", server)
	c := &closeRecorder{remote: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 9), Port: 1}}
	got, err := p.recorder(func(string, string, time.Duration) (net.Conn, error) {
		changed, moved := p.update([]string{"b:1", "c:1"}) // no connection yet: nothing to move
		require.True(t, changed)
		require.False(t, moved)
		return c, nil
	})("tcp", server, time.Second)
	require.Error(t, err)
	require.Nil(t, got)
	require.True(t, c.closed.Load(), "the connection to a is closed")
	next, _ := p.Next()
	require.Equal(t, "b:1", next, "the next attempt is on the new list")
}
