package recipes_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/peers"
	"github.com/zkrecipes/zkrecipes/integration/zktest"
)

// sameServers reports whether a and b hold the same servers.
func sameServers(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// A Session follows a reconfiguration of its ensemble: grown from 3
// servers to 5, then shrunk to 3 by removing the server it is on (which is
// then stopped), then grown to 4 (its watch, set again on the connection
// it moved to, sees that too), it ends on the new servers with the same
// ZooKeeper session, and the lock and the leadership it held all along are
// still its own (under LoseOnLost, a move to another server keeps them).
func TestReconfig_SessionFollowsTheEnsembleGrowingAndShrinkingWithItsLeases(t *testing.T) {
	server(t) // the suite's backend must be available
	opts := []zktest.Option{zktest.WithSize(3), zktest.WithReconfig(3)}
	if f := os.Getenv("ZKRECIPES_RECONFIG_LOG"); f != "" { // the servers' logs, to diagnose
		w, err := os.Create(f)
		require.NoError(t, err)
		defer w.Close()
		opts = append(opts, zktest.WithLogWriter(&lockedWriter{w: w}))
	}
	ens := zktest.Start(t, opts...)
	ctx := ctxT(t, 4*time.Minute)
	all := ens.Servers()[:5] // the sixth, a spare, joins at the end
	// The administrator stays on server 2, never removed; the follower
	// starts on 0 or 1.
	admin := connect(t, ens, all[2:3], zr.WithDigestAuth(zktest.SuperUser, zktest.SuperPassword),
		zr.WithEnsembleTracking(false))
	cl := connect(t, ens, all[:2], zr.WithSessionTimeout(10*time.Second), zr.WithLossPolicy(zr.LoseOnLost))
	sid := cl.SessionID()
	st := watchStates(t, cl.Session)

	cfg, err := cl.Config(ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, all[:3], cfg.Servers(), "the configuration names the ensemble")
	require.NotZero(t, cfg.Version)
	require.Eventually(t, func() bool { return sameServers(cl.Servers(), all[:3]) }, time.Minute, 20*time.Millisecond,
		"the Session dials the whole ensemble, not only the two servers it was given")

	p := testPath(t)
	lease, err := zr.NewMutex(cl.Session, p+"/lock").Acquire(ctx)
	require.NoError(t, err)
	leader, err := zr.NewElection(cl.Session, p+"/election").Campaign(ctx)
	require.NoError(t, err)

	// Grow: the two spares start, then join.
	require.NoError(t, ens.Restart(3))
	require.NoError(t, ens.Restart(4))
	v1, err := admin.IncrementalReconfig(ctx, []string{ens.ServerLine(3), ens.ServerLine(4)}, nil, cfg.Version)
	require.NoError(t, err)
	cfg1, err := admin.Config(ctx)
	require.NoError(t, err)
	require.Equal(t, v1, cfg1.Version, "Reconfig returns the new configuration's version")
	require.ElementsMatch(t, all, cfg1.Servers())
	require.Eventually(t, func() bool { return sameServers(cl.Servers(), all) }, time.Minute, 20*time.Millisecond,
		"the Session follows the grown ensemble")
	on := cl.Conn().Server()
	require.Contains(t, all[:2], on, "a server that stays is kept")

	// Shrink: the Session's server and a spare leave.
	gone := []int{slices.Index(all, on), 3}
	v2, err := admin.IncrementalReconfig(ctx, nil, []string{strconv.Itoa(gone[0] + 1), strconv.Itoa(gone[1] + 1)}, v1)
	require.NoError(t, err)
	var left []string
	for i, a := range all {
		if !slices.Contains(gone, i) {
			left = append(left, a)
		}
	}
	require.Eventually(t, func() bool { return sameServers(cl.Servers(), left) }, time.Minute, 20*time.Millisecond,
		"the Session follows the shrunk ensemble")
	t.Logf("left: %v (the Session was on %s)", gone, on)
	require.Eventually(t, func() bool {
		st := cl.State()
		return slices.Contains(left, cl.Conn().Server()) && (st == zr.StateConnected || st == zr.StateReconnected)
	}, time.Minute, 20*time.Millisecond, "the Session moved off the server that left")
	t.Logf("the Session is on %s, %v", cl.Conn().Server(), cl.State())
	for _, i := range gone {
		require.NoError(t, ens.Kill(i))
	}

	// The watch on the configuration was set again on the new connection:
	// a server added now is followed too.
	require.NoError(t, ens.Restart(5))
	_, err = admin.IncrementalReconfig(ctx, []string{ens.ServerLine(5)}, nil, v2)
	require.NoError(t, err)
	left = append(left, ens.Servers()[5])
	require.Eventually(t, func() bool { return sameServers(cl.Servers(), left) }, time.Minute, 20*time.Millisecond,
		"the Session follows a reconfiguration made after it moved")

	// Same session, still usable, and everything it held is still held.
	l2, err := zr.NewMutex(cl.Session, p+"/after").Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, l2.Release(ctx))
	assert.Equal(t, sid, cl.SessionID(), "the same ZooKeeper session throughout")
	assert.NoError(t, lease.Err(), "the lock is still held")
	assert.NoError(t, leader.Err(), "the leadership is still held")
	for _, l := range []*zr.Lease{lease, leader} {
		ok, stat, err := admin.Conn().Exists(l.Path())
		require.NoError(t, err)
		require.True(t, ok, "%s still exists", l.Path())
		assert.Equal(t, sid, stat.EphemeralOwner, "%s still the Session's", l.Path())
	}
	for {
		select {
		case ch := <-st.ch:
			assert.NotEqual(t, zr.StateLost, ch.State, "the session was never lost")
			continue
		default:
		}
		break
	}
	require.NoError(t, lease.Release(ctx))
	require.NoError(t, leader.Release(ctx))
}

// A reconfiguration is refused, typed, when the ensemble has it off,
// when the Session is not the super user, and when the version given is
// stale; the configuration node can be read and watched, never written.
func TestReconfig_RefusalsAreTypedAndTheConfigIsReadOnly(t *testing.T) {
	c := server(t) // reconfigEnabled=false
	ctx := ctxT(t, 2*time.Minute)
	plain := connect(t, c, nil)
	_, err := plain.IncrementalReconfig(ctx, nil, []string{"1"}, -1)
	require.ErrorIs(t, err, zr.ErrReconfigDisabled)

	ens := zktest.Start(t, zktest.WithSize(3), zktest.WithReconfig(0))
	cl := connect(t, ens, nil, zr.WithNamespace("app"))
	admin := connect(t, ens, nil, zr.WithDigestAuth(zktest.SuperUser, zktest.SuperPassword))
	cfg, err := cl.Config(ctx)
	require.NoError(t, err)
	require.Len(t, cfg.Members, 3)

	_, err = cl.IncrementalReconfig(ctx, nil, []string{"3"}, -1)
	require.ErrorIs(t, err, zr.ErrReconfigNotAuthorized)
	require.ErrorIs(t, err, zr.ErrNotAuthorized)

	_, err = admin.Reconfig(ctx, []string{cfg.Members[0].Line, cfg.Members[1].Line}, cfg.Version+1)
	require.ErrorIs(t, err, zr.ErrConfigChanged)
	require.ErrorIs(t, err, zr.ErrVersionChanged)
	after, err := admin.Config(ctx)
	require.NoError(t, err)
	require.Equal(t, cfg, after, "nothing changed")

	// Readable under the namespace as the ensemble's own node, watchable.
	data, stat, err := cl.GetData(ctx, zr.ConfigPath)
	require.NoError(t, err)
	require.NotNil(t, stat)
	parsed, err := zr.ParseEnsembleConfig(data)
	require.NoError(t, err)
	require.Equal(t, cfg, parsed)
	nc := zr.NewNodeCache(cl.Session, zr.ConfigPath)
	require.NoError(t, nc.Start(ctx))
	defer nc.Close(context.Background())
	n, ok := nc.Get()
	require.True(t, ok)
	require.Equal(t, data, n.Data)
	_, err = zr.NewMutex(cl.Session, zr.ConfigPath).Acquire(ctx)
	require.ErrorIs(t, err, zr.ErrInvalidPath, "no recipe writes there")
}

// lockedWriter serialises the writes of several servers' logs.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A real Curator client (its EnsembleTracker) and a zkrecipes Session,
// both given the first three servers, follow the same reconfigurations:
// a fourth server added, then the first removed. Both end with the new
// server list, on the ZooKeeper session they started with.
func TestReconfig_CuratorAndSessionFollowTheSameReconfiguration(t *testing.T) {
	server(t)
	peers.Require(t, peers.Curator)
	ens := zktest.Start(t, zktest.WithSize(3), zktest.WithReconfig(1))
	ctx := ctxT(t, 4*time.Minute)
	all := ens.Servers()
	admin := connect(t, ens, all[2:3], zr.WithDigestAuth(zktest.SuperUser, zktest.SuperPassword),
		zr.WithEnsembleTracking(false))
	cl := connect(t, ens, all[:3])
	sid := cl.SessionID()
	cur := startEnsemblePeer(t, all[:3])
	_, curSID := cur.await(t, func(servers []string, _ string) bool { return sameServers(servers, all[:3]) })

	cfg, err := admin.Config(ctx)
	require.NoError(t, err)
	require.NoError(t, ens.Restart(3))
	v, err := admin.IncrementalReconfig(ctx, []string{ens.ServerLine(3)}, nil, cfg.Version)
	require.NoError(t, err)
	cur.await(t, func(servers []string, id string) bool { return sameServers(servers, all) && id == curSID })
	require.Eventually(t, func() bool { return sameServers(cl.Servers(), all) }, time.Minute, 20*time.Millisecond,
		"the Session follows the server added")

	_, err = admin.IncrementalReconfig(ctx, nil, []string{"1"}, v)
	require.NoError(t, err)
	cur.await(t, func(servers []string, id string) bool { return sameServers(servers, all[1:]) && id == curSID })
	require.Eventually(t, func() bool { return sameServers(cl.Servers(), all[1:]) }, time.Minute, 20*time.Millisecond,
		"the Session follows the server removed")
	require.NoError(t, ens.Kill(0))
	_, _, err = cl.GetData(ctx, zr.ConfigPath)
	require.NoError(t, err, "the Session works on the servers left")
	assert.Equal(t, sid, cl.SessionID())
}

// ensemblePeer is a run of peers/java/EnsemblePeer.java.
type ensemblePeer struct {
	revokePeer // its output, read the same way
}

func startEnsemblePeer(t *testing.T, servers []string) *ensemblePeer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cp, err := peers.BuildJava(ctx)
	require.NoError(t, err)
	p := &ensemblePeer{}
	cmd := exec.Command("java", "-XX:+UseSerialGC", "-Xmx128m", "-cp", cp, "EnsemblePeer", strings.Join(servers, ","))
	cmd.Stdout = p
	cmd.Stderr = &p.err
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		if t.Failed() {
			p.mu.Lock()
			t.Logf("EnsemblePeer: stdout:\n%s\nstderr:\n%s", p.out.String(), p.err.String())
			p.mu.Unlock()
		}
	})
	return p
}

// await waits until the peer's latest state (its connection string split
// into servers, its session id) satisfies ok, and returns it.
func (p *ensemblePeer) await(t *testing.T, ok func(servers []string, sid string) bool) (servers []string, sid string) {
	t.Helper()
	require.Eventually(t, func() bool {
		p.mu.Lock()
		lines := strings.Split(p.out.String(), "\n")
		p.mu.Unlock()
		for i := len(lines) - 1; i >= 0; i-- {
			f := strings.Fields(lines[i])
			if len(f) == 3 && f[0] == "STATE" {
				servers, sid = strings.Split(f[1], ","), f[2]
				return ok(servers, sid)
			}
		}
		return false
	}, 2*time.Minute, 20*time.Millisecond, "Curator's state never came to what was awaited")
	return servers, sid
}
