package recipes_test

import (
	"cmp"
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

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/chaos"
	"github.com/zkrecipes/zkrecipes/integration/internal/fleet"
	"github.com/zkrecipes/zkrecipes/integration/peers"
	"github.com/zkrecipes/zkrecipes/zktest"
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
//
// Beside it, on the same server, a Session under LoseOnSuspended holds a
// lock too: moved off the server that leaves, it reports the suspension as
// the loss of its lease (Done, Err and the lease's Context say so), takes
// the lock again and follows the ensemble on the same ZooKeeper session.
//
// All along, four more Sessions (two under each loss policy, two of them
// starting on the Session's server) take one lock in turn and write to a node
// under each lease (Lease.Check in the write's Multi), and once more after
// releasing it, which the server refuses. The fenced checker
// (chaos.Check on their log) finds no holder that believed it held the
// lock when another acquired it without having been told of its loss, and
// the server applied their writes in token order (chaos.CheckWriteOrder);
// every one of them acquired during the growth, and during the shrinking
// both once the Sessions had moved and once the servers that left were
// stopped; and those under LoseOnLost lost nothing.
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
	// The administrator may use any server (whichever leaves, it finds
	// another); the follower starts on 0 or 1.
	admin := connect(t, ens, all, zr.WithDigestAuth(zktest.SuperUser, zktest.SuperPassword),
		zr.WithEnsembleTracking(false))
	cl := connect(t, ens, all[:2], zr.WithSessionTimeout(10*time.Second), zr.WithLossPolicy(zr.LoseOnLost))
	sid := cl.SessionID()
	st := watchStates(t, cl.Session)
	on0 := cl.Conn().Server()
	require.Contains(t, all[:2], on0)
	other := all[0]
	if on0 == all[0] {
		other = all[1]
	}
	// The same server, the other loss policy.
	sus := connect(t, ens, []string{on0}, zr.WithSessionTimeout(10*time.Second), zr.WithLossPolicy(zr.LoseOnSuspended))
	susID := sus.SessionID()
	susSt := watchStates(t, sus.Session)

	cfg, err := cl.Config(ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, all[:3], cfg.Servers(), "the configuration names the ensemble")
	require.NotZero(t, cfg.Version)
	require.Eventually(t, func() bool { return sameServers(cl.Servers(), all[:3]) }, time.Minute, 20*time.Millisecond,
		"the Session dials the whole ensemble, not only the two servers it was given")

	p := testPath(t)
	_, err = cl.Create(ctx, p+"/data", nil, zr.WithParents(true))
	require.NoError(t, err)
	fc := newFencedContenders(t, p+"/fenced", p+"/data")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("contenders' log, last lines:\n%s", fc.tailLog(80))
		}
	})
	type contender struct {
		id     string
		at     string // the one server it is given
		policy zr.LossPolicy
		c      *client
		sid    int64
	}
	cs := []*contender{{id: "c1", at: on0, policy: zr.LoseOnLost}, {id: "c2", at: on0, policy: zr.LoseOnSuspended},
		{id: "c3", at: other, policy: zr.LoseOnSuspended}, {id: "c4", at: all[2], policy: zr.LoseOnLost}}
	sessions := []*client{cl, sus}
	none := map[string]int{}
	for _, c := range cs {
		c.c = connect(t, ens, []string{c.at}, zr.WithSessionTimeout(10*time.Second), zr.WithLossPolicy(c.policy))
		c.sid = c.c.SessionID()
		sessions = append(sessions, c.c)
		none[c.id] = 0
	}
	t.Cleanup(fc.stop) // registered after the last connect: runs before the first Close
	for _, c := range cs {
		fc.start(c.id, c.c.Session)
	}
	require.Eventually(t, func() bool { return fc.eachAcquiredSince(none) }, 2*time.Minute, 20*time.Millisecond,
		"every contender takes the lock in turn")
	everyone := func(servers []string) func() bool {
		return func() bool {
			for _, s := range sessions {
				if !sameServers(s.Servers(), servers) {
					return false
				}
			}
			return true
		}
	}

	lease, err := zr.NewMutex(cl.Session, p+"/lock").Acquire(ctx)
	require.NoError(t, err)
	leader, err := zr.NewElection(cl.Session, p+"/election").Campaign(ctx)
	require.NoError(t, err)
	susLease, err := zr.NewMutex(sus.Session, p+"/sus").Acquire(ctx)
	require.NoError(t, err)
	susCtx, susCancel := susLease.Context(ctx)
	defer func() { susCancel() }()

	// Grow: the two spares start, then join.
	grow := fc.log.Add(chaos.Fault, "grow", "add", 4, 5)
	require.NoError(t, ens.Restart(3))
	require.NoError(t, ens.Restart(4))
	v1 := reconfigure(t, ctx, admin, []string{ens.ServerLine(3), ens.ServerLine(4)}, nil, cfg.Version, all)
	require.Eventually(t, func() bool { return sameServers(cl.Servers(), all) }, time.Minute, 20*time.Millisecond,
		"the Session follows the grown ensemble")
	require.Eventually(t, everyone(all), time.Minute, 20*time.Millisecond, "every Session follows the grown ensemble")
	since := fc.counts()
	require.Eventually(t, func() bool { return fc.eachAcquiredSince(since) }, 2*time.Minute, 20*time.Millisecond,
		"every contender takes the lock again on the grown ensemble")
	grown := fc.log.Add(chaos.Heal, "grow")
	connected := func(s *client) bool {
		st := s.State()
		return st == zr.StateConnected || st == zr.StateReconnected
	}
	require.Eventually(t, func() bool { return connected(cl) && connected(sus) }, time.Minute, 20*time.Millisecond)
	on := cl.Conn().Server()
	// ZooKeeper may hand the leadership over in a reconfiguration (to
	// the leader it designates), and the servers then drop their clients:
	// only a Session never disconnected is sure to be where it was.
	clSeen, susSeen := st.received(), susSt.received()
	if len(clSeen) == 0 {
		require.Equal(t, on0, on, "a server that stays is kept")
	} else {
		t.Logf("the Session reconnected while the ensemble grew: %v", clSeen)
	}
	if len(susSeen) == 0 {
		require.Equal(t, on0, sus.Conn().Server(), "a server that stays is kept")
	} else {
		t.Logf("the LoseOnSuspended Session reconnected while the ensemble grew: %v", susSeen)
	}
	if err := susLease.Err(); err != nil {
		// Only such a reconnection ends it before its server leaves.
		require.NotEmpty(t, susSeen, "the lease ended on no state change: %v", err)
		require.ErrorIs(t, err, zr.ErrSuspended)
		actx, acancel := context.WithTimeout(ctx, time.Minute)
		susLease, err = zr.NewMutex(sus.Session, p+"/sus").Acquire(actx)
		acancel()
		require.NoError(t, err)
		susCancel()
		susCtx, susCancel = susLease.Context(ctx)
	}

	// Shrink: the server the Session is on leaves, with the server of
	// the LoseOnSuspended Session (the same one, unless a reconnection
	// parted them) or else the server of the most contenders.
	gone := []int{slices.Index(all, on)}
	if i := slices.Index(all, sus.Conn().Server()); i != gone[0] {
		gone = append(gone, i)
	} else {
		n := make([]int, len(all))
		for _, c := range cs {
			if i := slices.Index(all, c.c.Conn().Server()); i >= 0 {
				n[i]++
			}
		}
		most := -1
		for i := range all {
			if i != gone[0] && (most < 0 || n[i] > n[most]) {
				most = i
			}
		}
		gone = append(gone, most)
	}
	require.NotContains(t, gone, -1)
	var moving []string
	for _, c := range cs {
		if slices.Contains(gone, slices.Index(all, c.c.Conn().Server())) {
			moving = append(moving, c.id)
		}
	}
	t.Logf("removing servers %v; contenders on them: %v", gone, moving)
	shrink := fc.log.Add(chaos.Fault, "shrink", "remove", gone[0]+1, gone[1]+1)
	var left []string
	for i, a := range all {
		if !slices.Contains(gone, i) {
			left = append(left, a)
		}
	}
	v2 := reconfigure(t, ctx, admin, nil, []string{strconv.Itoa(gone[0] + 1), strconv.Itoa(gone[1] + 1)}, v1, left)
	require.Eventually(t, func() bool { return sameServers(cl.Servers(), left) }, time.Minute, 20*time.Millisecond,
		"the Session follows the shrunk ensemble")
	t.Logf("left: %v (the Session was on %s)", gone, on)
	require.Eventually(t, func() bool { return slices.Contains(left, cl.Conn().Server()) && connected(cl) },
		time.Minute, 20*time.Millisecond, "the Session moved off the server that left")
	t.Logf("the Session is on %s, %v", cl.Conn().Server(), cl.State())
	require.Eventually(t, everyone(left), time.Minute, 20*time.Millisecond, "every Session follows the shrunk ensemble")
	require.Eventually(t, func() bool {
		for _, s := range sessions {
			if !slices.Contains(left, s.Conn().Server()) || !connected(s) {
				return false
			}
		}
		return true
	}, time.Minute, 20*time.Millisecond, "every Session moved off the server that left")

	// Under LoseOnSuspended, the move is a suspension, reported as the
	// loss of the lease.
	select {
	case <-susLease.Done():
	case <-time.After(time.Minute):
		t.Fatal("the LoseOnSuspended Session's lease did not end when its server left")
	}
	require.ErrorIs(t, susLease.Err(), zr.ErrLockLost)
	require.ErrorIs(t, susLease.Err(), zr.ErrSuspended, "the loss says the connection was suspended")
	<-susCtx.Done()
	require.ErrorIs(t, context.Cause(susCtx), zr.ErrSuspended, "the lease's Context ends with the loss as its cause")
	susSt.next(t, time.Minute, zr.StateSuspended) // states since the grow's end

	since = fc.counts()
	require.Eventually(t, func() bool { return fc.eachAcquiredSince(since) }, 2*time.Minute, 20*time.Millisecond,
		"every contender, moved or not, takes the lock again on the servers left")
	for _, i := range gone {
		require.NoError(t, ens.Kill(i))
	}
	since = fc.counts()
	require.Eventually(t, func() bool { return fc.eachAcquiredSince(since) }, 2*time.Minute, 20*time.Millisecond,
		"every contender takes the lock again once the servers that left are stopped")
	shrunk := fc.log.Add(chaos.Heal, "shrink")

	// The LoseOnSuspended Session takes its lock again.
	actx, acancel := context.WithTimeout(ctx, time.Minute)
	susLease, err = zr.NewMutex(sus.Session, p+"/sus").Acquire(actx)
	acancel()
	require.NoError(t, err, "the lock lost on the move is taken again")

	// The watch on the configuration was set again on the new connection:
	// a server added now is followed too.
	require.NoError(t, ens.Restart(5))
	left = append(left, ens.Servers()[5])
	reconfigure(t, ctx, admin, []string{ens.ServerLine(5)}, nil, v2, left)
	require.Eventually(t, func() bool { return sameServers(cl.Servers(), left) }, time.Minute, 20*time.Millisecond,
		"the Session follows a reconfiguration made after it moved")
	require.Eventually(t, everyone(left), time.Minute, 20*time.Millisecond, "every Session follows it")

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
	for _, ch := range append(clSeen, st.received()...) {
		assert.NotEqual(t, zr.StateLost, ch.State, "the session was never lost")
	}
	require.NoError(t, lease.Release(ctx))
	require.NoError(t, leader.Release(ctx))
	assert.Equal(t, susID, sus.SessionID(), "the LoseOnSuspended Session kept its ZooKeeper session")
	assert.NoError(t, susLease.Err())
	require.NoError(t, susLease.Release(ctx))

	// The fenced checker, over the contenders' whole run.
	fc.stop()
	evs := fc.events(t)
	rep := chaos.Check(evs)
	ordered, unordered, outOfOrder := chaos.CheckWriteOrder(evs)
	losses := lossesOf(evs)
	duringGrow, duringShrink := acquiredBetween(evs, grow, grown), acquiredBetween(evs, shrink, shrunk)
	t.Logf("contenders: %d acquisitions (%v), while growing %v, while shrinking %v; losses %v (%d explained overlaps); writes: %d accepted in the server's order, %d without it, %d refused; %d failed acquisitions",
		rep.Acquisitions, fleet.SortedCounts(rep.ByClient), fleet.SortedCounts(duringGrow), fleet.SortedCounts(duringShrink),
		cmp.Or(fleet.SortedCounts(losses), "none"), rep.Explained, ordered, unordered, rep.WritesRefused, rep.Errors)
	assert.Empty(t, rep.Violations, "a holder overlapped by another without having been told of its loss, or tokens out of order")
	assert.Empty(t, outOfOrder, "a fenced write applied after a later holder's")
	assert.Empty(t, fc.problems, "what the contenders found wrong")
	assert.Empty(t, rep.Open, "holdings never closed")
	assert.Positive(t, ordered, "fenced writes applied")
	assert.Positive(t, rep.WritesRefused, "writes under released leases, refused")
	for _, c := range cs {
		assert.GreaterOrEqual(t, duringGrow[c.id], 1, "%s's acquisitions while the ensemble grew", c.id)
		assert.GreaterOrEqual(t, duringShrink[c.id], 2, "%s's acquisitions while the ensemble shrank (after the moves, after the stops)", c.id)
		assert.Equal(t, c.sid, c.c.SessionID(), "%s kept its ZooKeeper session", c.id)
		if c.policy == zr.LoseOnLost {
			assert.Zero(t, losses[c.id], "%s, under LoseOnLost, lost no lease in the moves", c.id)
		}
	}
}

// received returns the changes w has received and not yet read.
func (w *states) received() []zr.StateChange {
	var out []zr.StateChange
	for {
		select {
		case ch := <-w.ch:
			out = append(out, ch)
		default:
			return out
		}
	}
}

// reconfigure makes an incremental reconfiguration of the ensemble from
// version, to the servers want, and returns the new configuration's
// version, as an administrator does: a reconfiguration whose connection
// closed under it (a leader election on a loaded machine) may or may not
// have been applied, so it reads the configuration and sends it again
// only if it was not.
func reconfigure(t *testing.T, ctx context.Context, admin *client, joining, leaving []string, version int64, want []string) int64 {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		v, err := admin.IncrementalReconfig(ctx, joining, leaving, version)
		if err == nil {
			var cfg *zr.EnsembleConfig
			require.Eventually(t, func() bool { // the connection may drop again under the read
				cfg, err = admin.Config(ctx)
				return err == nil
			}, time.Minute, 50*time.Millisecond, "reading the configuration back")
			require.Equal(t, v, cfg.Version, "Reconfig returns the new configuration's version")
			require.ElementsMatch(t, want, cfg.Servers())
			return v
		}
		require.NotErrorIs(t, err, zr.ErrReconfigNotAuthorized)
		require.NotErrorIs(t, err, zr.ErrReconfigDisabled)
		require.True(t, ctx.Err() == nil && time.Now().Before(deadline), "reconfiguring: %v", err)
		t.Logf("reconfiguration failed: %v; reading the configuration", err)
		if cfg, cerr := admin.Config(ctx); cerr == nil && sameServers(cfg.Servers(), want) {
			return cfg.Version // applied, its reply lost
		} else if cerr == nil && cfg.Version != version {
			require.Failf(t, "the configuration changed otherwise", "version %x, servers %v", cfg.Version, cfg.Servers())
		}
		select { // paces the attempts while the ensemble elects a leader
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
		}
	}
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

// A reconfiguration whose reply is lost with the connection may have been
// applied: it fails as every other write then does, with ErrOutcomeUnknown
// and the connection's error, and Config tells what happened (here, it was
// applied: the request reached the server).
func TestReconfig_ALostReplyIsAnUnknownOutcome(t *testing.T) {
	server(t)
	ens := zktest.Start(t, zktest.WithSize(3), zktest.WithReconfig(0))
	ctx := ctxT(t, 2*time.Minute)
	px := zktest.NewProxy(t, ens.Servers()[0])
	admin := connect(t, ens, []string{px.Addr()}, zr.WithDigestAuth(zktest.SuperUser, zktest.SuperPassword),
		zr.WithEnsembleTracking(false))
	cfg, err := admin.Config(ctx)
	require.NoError(t, err)
	require.Len(t, cfg.Members, 3)

	px.LoseRequestReply(1, 500*time.Millisecond)
	_, err = admin.IncrementalReconfig(ctx, nil, []string{"3"}, cfg.Version)
	require.ErrorIs(t, err, zr.ErrOutcomeUnknown)
	require.ErrorIs(t, err, zk.ErrConnectionClosed)

	var after *zr.EnsembleConfig
	require.Eventually(t, func() bool {
		after, err = admin.Config(ctx) // once connected again
		return err == nil
	}, time.Minute, 50*time.Millisecond)
	assert.Len(t, after.Members, 2, "applied, its reply lost")
	assert.NotEqual(t, cfg.Version, after.Version)
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
	// As in the test above, a change of leader may drop the reply:
	// reconfigure reads the configuration back before sending it again.
	v := reconfigure(t, ctx, admin, []string{ens.ServerLine(3)}, nil, cfg.Version, all)
	cur.await(t, func(servers []string, id string) bool { return sameServers(servers, all) && id == curSID })
	require.Eventually(t, func() bool { return sameServers(cl.Servers(), all) }, time.Minute, 20*time.Millisecond,
		"the Session follows the server added")

	reconfigure(t, ctx, admin, nil, []string{"1"}, v, all[1:])
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
