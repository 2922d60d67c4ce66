package recipes_test

import (
	"context"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
	"go.uber.org/goleak"
)

// shardName is the name Curator's QueueSharder (and ours) gives a shard.
const shardName = `^queue-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`

// fastChecks are the sharder policies of these tests: a small threshold,
// checked often.
func fastChecks(threshold, maxQueues int) []zr.SharderOption {
	return []zr.SharderOption{zr.WithNewQueueThreshold(threshold), zr.WithThresholdCheckPeriod(50 * time.Millisecond),
		zr.WithMaxQueues(maxQueues)}
}

// listings counts a Session's successful listings of dir: a sharder lists
// its queues path once per check, so that n more listings are n more
// checks.
type listings struct {
	zr.BaseObserver
	dir  string
	seen atomic.Int32
}

func (l *listings) OpDone(_ context.Context, ev zr.OpEvent) {
	if ev.Op == "getChildren" && ev.Path == l.dir && ev.Err == nil {
		l.seen.Add(1)
	}
}

// awaitChecks waits until the sharder behind l has made n more checks.
func (l *listings) awaitChecks(t *testing.T, n int) {
	t.Helper()
	from := l.seen.Load()
	require.Eventually(t, func() bool { return l.seen.Load() >= from+int32(n) }, 60*time.Second, 10*time.Millisecond,
		"the sharder stopped checking its shards")
}

// sharderPaths returns the test's queues and leader paths, with nothing
// left under them (nor under the default locks path) by an earlier run.
func sharderPaths(t *testing.T, c *zktest.Cluster) (queues, leader string) {
	t.Helper()
	queues = testPath(t)
	observer := raw(t, c)
	for _, p := range []string{queues, queues + "-leader", queues + "-locks"} {
		require.NoError(t, deleteTree(observer, p))
	}
	return queues, queues + "-leader"
}

// startSharder starts a sharder and closes it when the test ends.
func startSharder(t *testing.T, ctx context.Context, s *zr.Session, queues, leader string, opts ...zr.SharderOption) *zr.QueueSharder {
	t.Helper()
	sh := zr.NewQueueSharder(s, queues, leader, opts...)
	require.NoError(t, sh.Start(ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		assert.NoError(t, sh.Close(ctx))
	})
	return sh
}

// fillShard puts items on the shard at path until it holds n.
func fillShard(t *testing.T, ctx context.Context, c *zktest.Cluster, s *zr.Session, path string, n int) {
	t.Helper()
	observer := raw(t, c)
	for i := len(children(t, observer, path)); i < n; i++ {
		require.NoError(t, zr.NewWorkQueue(s, path).Put(ctx, []byte(fmt.Sprintf("fill-%d", i))))
	}
}

func TestQueueSharder_OnlyTheLeaderAddsAShardPastTheThreshold(t *testing.T) {
	c := server(t)
	queues, leader := sharderPaths(t, c)
	ctx := ctxT(t, 120*time.Second)
	holder := zr.NewElection(connect(t, c, nil).Session, leader)
	held, err := holder.Campaign(ctx) // leads, and adds no shard: not a sharder
	require.NoError(t, err)

	l := &listings{dir: queues}
	cl := connect(t, c, nil, zr.WithObserver(l))
	sh := startSharder(t, ctx, cl.Session, queues, leader, fastChecks(4, 2)...)
	observer := raw(t, c)
	require.Len(t, sh.Shards(), 1, "Start adds a shard when there is none")
	first := sh.Shards()[0]
	assert.Regexp(t, shardName, strings.TrimPrefix(first, queues+"/"))
	assert.Equal(t, []string{strings.TrimPrefix(first, queues+"/")}, children(t, observer, queues))

	for i := range 6 {
		require.NoError(t, sh.Put(ctx, []byte(fmt.Sprintf("early-%d", i))))
	}
	l.awaitChecks(t, 5)
	assert.Len(t, children(t, observer, queues), 1, "a sharder that does not lead adds no shard")
	assert.Len(t, sh.Shards(), 1)

	require.NoError(t, held.Release(ctx))
	require.Eventually(t, func() bool { return len(children(t, observer, queues)) == 2 }, 60*time.Second, 10*time.Millisecond,
		"the sharder leads once the holder resigns, and adds a shard")
	lead, err := holder.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, cl.SessionID(), lead.SessionID, "the sharder leads")
	require.Eventually(t, func() bool { return len(sh.Shards()) == 2 }, 30*time.Second, 10*time.Millisecond)
	second := sh.Shards()[slices.IndexFunc(sh.Shards(), func(p string) bool { return p != first })]
	assert.Regexp(t, shardName, strings.TrimPrefix(second, queues+"/"))

	for i := range 3 { // below the threshold: none is added meanwhile
		require.NoError(t, sh.Put(ctx, []byte(fmt.Sprintf("late-%d", i))))
	}
	assert.Len(t, children(t, observer, first), 6, "puts avoid the shard over the threshold")
	assert.Len(t, children(t, observer, second), 3, "puts go to the shard under it")
}

func TestQueueSharder_AddsNoMoreThanMaxQueues(t *testing.T) {
	c := server(t)
	queues, _ := sharderPaths(t, c)
	ctx := ctxT(t, 120*time.Second)
	l := &listings{dir: queues}
	cl := connect(t, c, nil, zr.WithObserver(l))
	sh := startSharder(t, ctx, cl.Session, queues, queues+"-leader", fastChecks(2, 3)...)
	observer := raw(t, c)
	deadline := time.Now().Add(60 * time.Second)
	for len(sh.Shards()) < 3 {
		require.True(t, time.Now().Before(deadline), "the leader added %d shards, not 3", len(sh.Shards()))
		for _, p := range sh.Shards() {
			fillShard(t, ctx, c, cl.Session, p, 2)
		}
		l.awaitChecks(t, 1)
	}
	for _, p := range sh.Shards() {
		fillShard(t, ctx, c, cl.Session, p, 2) // every shard over the threshold
	}
	l.awaitChecks(t, 5)
	assert.Len(t, children(t, observer, queues), 3, "no shard past WithMaxQueues")
	assert.Len(t, sh.Shards(), 3)
}

func TestQueueSharder_SeesShardsAnotherAddedAndTakesFromEveryShard(t *testing.T) {
	c := server(t)
	queues, leader := sharderPaths(t, c)
	ctx := ctxT(t, 120*time.Second)
	ac := connect(t, c, nil)
	a := startSharder(t, ctx, ac.Session, queues, leader, fastChecks(3, 2)...)
	election := zr.NewElection(ac.Session, leader)
	require.Eventually(t, func() bool {
		l, err := election.Leader(ctx)
		return err == nil && l.SessionID == ac.SessionID()
	}, 60*time.Second, 10*time.Millisecond, "the first sharder leads")
	shardLists := &shardListings{dir: queues + "/"}
	bc := connect(t, c, nil, zr.WithObserver(shardLists))
	b := startSharder(t, ctx, bc.Session, queues, leader, fastChecks(3, 2)...)
	assert.Equal(t, a.Shards(), b.Shards(), "Start learns the shards there")

	var want []string
	for i := range 3 {
		want = append(want, fmt.Sprintf("a-%d", i))
		require.NoError(t, a.Put(ctx, []byte(want[i])))
	}
	require.Eventually(t, func() bool { return len(b.Shards()) == 2 }, 60*time.Second, 10*time.Millisecond,
		"the follower learns of the shard the leader added")
	assert.Equal(t, a.Shards(), b.Shards())
	for i := range 2 {
		want = append(want, fmt.Sprintf("a-late-%d", i))
		require.NoError(t, a.Put(ctx, []byte(want[len(want)-1])))
	}
	for _, p := range a.Shards() {
		require.NotEmpty(t, children(t, raw(t, c), p), "items in every shard")
	}

	var got []string
	for range want {
		wi, err := b.Take(ctx)
		require.NoError(t, err)
		got = append(got, string(wi.Data()))
		require.NoError(t, wi.Ack(ctx))
	}
	assert.ElementsMatch(t, want, got, "the follower takes every item of every shard, once")

	// A Take waiting on every shard wakes for an item put on any of them.
	from := shardLists.seen.Load()
	took := make(chan workTaken, 1)
	go func() {
		wi, err := b.Take(ctx)
		took <- workTaken{wi, err}
	}()
	require.Eventually(t, func() bool { return shardLists.seen.Load() >= from+int32(2*len(b.Shards())) }, 60*time.Second,
		10*time.Millisecond, "the take listed every shard, the second time with a watch")
	last := a.Shards()[1]
	require.NoError(t, zr.NewWorkQueue(connect(t, c, nil).Session, last).Put(ctx, []byte("wake")))
	select {
	case r := <-took:
		require.NoError(t, r.err)
		assert.Equal(t, "wake", string(r.wi.Data()))
		require.NoError(t, r.wi.Ack(ctx))
	case <-ctx.Done():
		t.Fatal("the waiting take did not take the item put on a shard")
	}
}

// shardListings counts a Session's successful listings of the shards
// under a queues path.
type shardListings struct {
	zr.BaseObserver
	dir  string
	seen atomic.Int32
}

func (l *shardListings) OpDone(_ context.Context, ev zr.OpEvent) {
	if ev.Op == "getChildren" && strings.HasPrefix(ev.Path, l.dir) && ev.Err == nil {
		l.seen.Add(1)
	}
}

func TestQueueSharder_AnotherLeadsOnceTheLeadersSessionExpires(t *testing.T) {
	c := server(t)
	queues, leader := sharderPaths(t, c)
	ctx := ctxT(t, 120*time.Second)
	ac := connect(t, c, nil)
	startSharder(t, ctx, ac.Session, queues, leader, fastChecks(3, 2)...)
	election := zr.NewElection(connect(t, c, nil).Session, leader)
	require.Eventually(t, func() bool {
		l, err := election.Leader(ctx)
		return err == nil && l.SessionID == ac.SessionID()
	}, 60*time.Second, 10*time.Millisecond, "the first sharder leads")
	bc := connect(t, c, nil)
	b := startSharder(t, ctx, bc.Session, queues, leader, fastChecks(3, 2)...)
	require.Eventually(t, func() bool { ps, err := election.Participants(ctx); return err == nil && len(ps) == 2 }, 60*time.Second,
		10*time.Millisecond, "the second sharder campaigns")

	ac.expire(t)
	require.Eventually(t, func() bool {
		l, err := election.Leader(ctx)
		return err == nil && l.SessionID == bc.SessionID()
	}, 60*time.Second, 10*time.Millisecond, "the second sharder leads once the leader's session expired")
	for i := range 3 {
		require.NoError(t, b.Put(ctx, []byte(fmt.Sprintf("item-%d", i))))
	}
	require.Eventually(t, func() bool { return len(children(t, raw(t, c), queues)) == 2 }, 60*time.Second, 10*time.Millisecond,
		"the new leader adds a shard")
	require.Eventually(t, func() bool {
		ps, err := election.Participants(ctx)
		return err == nil && len(ps) == 2 && ps[1].SessionID == ac.SessionID()
	}, 60*time.Second, 10*time.Millisecond, "the first sharder campaigns again on its new session, behind the leader")
}

// Close stops everything the sharder runs: its goroutines end, a Take
// waiting on it returns ErrClosed, its node under the leader path goes,
// and the watches it set are not followed (go-zookeeper cannot remove a
// one-shot watch: they fire at the next change and are not set again), so
// that the server's watch count comes back. The shards stay, by design.
func TestQueueSharder_CloseLeavesNoGoroutineNoWatchAndNoNodeButTheShards(t *testing.T) {
	server(t)            // the suite's backend must be available
	c := zktest.Start(t) // a server of its own: mntr counts every session's watches
	queues, leader := sharderPaths(t, c)
	ctx := ctxT(t, 120*time.Second)
	watches := func() int { total, _ := serverWatches(t, c, 0); return total }
	ac, bc := connect(t, c, nil), connect(t, c, nil)
	observer := raw(t, c)
	before := watches()
	ignore := goleak.IgnoreCurrent()

	a := zr.NewQueueSharder(ac.Session, queues, leader, fastChecks(3, 2)...)
	require.NoError(t, a.Start(ctx))
	b := zr.NewQueueSharder(bc.Session, queues, leader, fastChecks(3, 2)...)
	require.NoError(t, b.Start(ctx))
	require.Eventually(t, func() bool { return len(children(t, observer, leader)) == 2 }, 60*time.Second, 10*time.Millisecond)
	took := make(chan error, 1)
	go func() {
		_, err := b.Take(ctx)
		took <- err
	}()
	require.Eventually(t, func() bool { return watches() >= before+2 }, 60*time.Second, 10*time.Millisecond,
		"the follower watches the leader's node, and its take the shard")

	require.NoError(t, b.Close(ctx))
	select {
	case err := <-took:
		assert.ErrorIs(t, err, zr.ErrClosed, "a take waiting at Close")
	case <-ctx.Done():
		t.Fatal("a take waiting at Close did not return")
	}
	require.NoError(t, a.Close(ctx))
	assert.ErrorIs(t, b.Start(ctx), zr.ErrSharderStarted)
	_, err := a.Queue()
	assert.ErrorIs(t, err, zr.ErrClosed)

	assert.Empty(t, children(t, observer, leader), "no node of the sharders under the leader path")
	shards := children(t, observer, queues)
	require.Len(t, shards, 1, "the shard stays")
	require.NoError(t, zr.NewWorkQueue(ac.Session, queues+"/"+shards[0]).Put(ctx, []byte("fires the ended take's watch")))
	require.Eventually(t, func() bool { return watches() <= before }, 60*time.Second, 10*time.Millisecond,
		"a watch of the closed sharders is still followed")
	goleak.VerifyNone(t, append(sessionGoroutines, ignore)...)
}

// sessionGoroutines are the Session's own goroutines, which a recipe's
// Close leaves: its pooled workers, and go-zookeeper's connection loops
// (made again on a reconnection).
var sessionGoroutines = []goleak.Option{
	goleak.IgnoreTopFunction("github.com/zkrecipes/zkrecipes.(*Session).work"),
	goleak.IgnoreAnyFunction("github.com/go-zookeeper/zk.(*Conn).recvLoop"),
	goleak.IgnoreAnyFunction("github.com/go-zookeeper/zk.(*Conn).sendLoop"),
	goleak.IgnoreAnyFunction("github.com/go-zookeeper/zk.(*Conn).loop.func2"),
}

// A Take waiting on every shard waits through a dropped connection and
// takes the item put meanwhile.
func TestQueueSharder_TakeWaitsThroughADroppedConnection(t *testing.T) {
	c := server(t)
	queues, leader := sharderPaths(t, c)
	ctx := ctxT(t, 120*time.Second)
	a := startSharder(t, ctx, connect(t, c, nil).Session, queues, leader, fastChecks(3, 2)...)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	shardLists := &shardListings{dir: queues + "/"}
	bc := connect(t, c, []string{proxy.Addr()}, zr.WithSessionTimeout(30*time.Second), zr.WithObserver(shardLists))
	b := startSharder(t, ctx, bc.Session, queues, leader, fastChecks(3, 2)...)
	st := watchStates(t, bc.Session)

	took := make(chan workTaken, 1)
	go func() {
		wi, err := b.Take(ctx)
		took <- workTaken{wi, err}
	}()
	require.Eventually(t, func() bool { return shardLists.seen.Load() >= int32(2*len(b.Shards())) }, 60*time.Second,
		10*time.Millisecond, "the take listed every shard, the second time with a watch")
	proxy.ResetAll()
	require.NoError(t, a.Put(ctx, []byte("meanwhile")))
	select {
	case r := <-took:
		require.NoError(t, r.err)
		assert.Equal(t, "meanwhile", string(r.wi.Data()))
		require.NoError(t, r.wi.Ack(ctx))
	case <-ctx.Done():
		t.Fatal("the take did not take the item put while its connection was down")
	}
	st.next(t, 60*time.Second, zr.StateSuspended)
	st.next(t, 60*time.Second, zr.StateReconnected) // the connection was dropped and made again
}

// A Start that fails (here: the queues path refuses the first shard's
// create) says why with a typed error and leaves nothing running: no
// goroutine, no node under the leader path; the sharder is then closed
// (a second Start is refused, Queue says ErrClosed) and Close returns nil.
func TestQueueSharder_FailedStartLeavesNoGoroutineNorLeaderNode(t *testing.T) {
	c := server(t)
	queues, leader := sharderPaths(t, c)
	ctx := ctxT(t, 120*time.Second)
	observer := raw(t, c)
	mkdirs(t, observer, path.Dir(queues))
	_, err := observer.Create(queues, nil, 0, zk.WorldACL(zk.PermRead)) // listed, but no shard can be made under it
	require.NoError(t, err)
	cl := connect(t, c, nil)
	ignore := goleak.IgnoreCurrent()

	sh := zr.NewQueueSharder(cl.Session, queues, leader, fastChecks(3, 2)...)
	err = sh.Start(ctx)
	require.ErrorIs(t, err, zr.ErrNotAuthorized)
	assert.Contains(t, err.Error(), "create "+queues+"/queue-", "the error names the request refused")
	assert.ErrorIs(t, sh.Start(ctx), zr.ErrSharderStarted, "a sharder starts once")
	_, err = sh.Queue()
	assert.ErrorIs(t, err, zr.ErrClosed)
	_, err = sh.Take(ctx)
	assert.ErrorIs(t, err, zr.ErrClosed)
	assert.NoError(t, sh.Close(ctx))
	goleak.VerifyNone(t, append(sessionGoroutines, ignore)...)
	ok, _, err := observer.Exists(leader)
	require.NoError(t, err)
	if ok {
		assert.Empty(t, children(t, observer, leader), "no node of the sharder under the leader path")
	}
	assert.Empty(t, children(t, observer, queues), "no shard")
}

// A campaign the server refuses (here: the leader path's ACL refuses the
// latch node) is tried again at a pace, even under a retry policy that
// gives up at once: the sharder neither hammers the server nor floods its
// log while it cannot campaign.
func TestQueueSharder_RefusedCampaignIsTriedAgainAtAPaceNotInALoop(t *testing.T) {
	c := server(t)
	queues, leader := sharderPaths(t, c)
	ctx := ctxT(t, 120*time.Second)
	observer := raw(t, c)
	mkdirs(t, observer, path.Dir(leader))
	_, err := observer.Create(leader, nil, 0, zk.WorldACL(zk.PermRead))
	require.NoError(t, err)
	l := &listings{dir: queues}
	failures := &logCount{says: "campaign failed"}
	cl := connect(t, c, nil, zr.WithObserver(l), zr.WithRetryPolicy(zr.NoRetry()), zr.WithLogger(slog.New(failures)))
	startSharder(t, ctx, cl.Session, queues, leader, fastChecks(3, 2)...)
	require.Eventually(t, func() bool { return failures.n.Load() >= 1 }, 60*time.Second, 10*time.Millisecond,
		"the refused campaign is logged")
	from := failures.n.Load()
	l.awaitChecks(t, 4) // 200 ms at least
	assert.LessOrEqual(t, failures.n.Load()-from, int32(3), "campaigns refused while the sharder checked its shards 4 times")
}

// A child of the queues path that cannot be a shard (another client's
// node whose name makes a path over this Session's request size limit) is
// left out, and said once, however many checks list it: the sharder makes
// a shard of its own, and puts and takes go on; before, every Take failed
// on it.
func TestQueueSharder_AChildThatCannotBeAShardIsLeftOutAndSaidOnce(t *testing.T) {
	c := server(t)
	queues, leader := sharderPaths(t, c)
	ctx := ctxT(t, 120*time.Second)
	observer := raw(t, c)
	mkdirs(t, observer, queues)
	long := "queue-" + strings.Repeat("x", 4096)
	_, err := observer.Create(queues+"/"+long, nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)

	l := &listings{dir: queues}
	warned := &logCount{says: "cannot be a shard"}
	cl := connect(t, c, nil, zr.WithObserver(l), zr.WithMaxRequestSize(4096), zr.WithLogger(slog.New(warned)))
	sh := startSharder(t, ctx, cl.Session, queues, leader, fastChecks(3, 2)...)
	shards := sh.Shards()
	require.Len(t, shards, 1, "a shard of its own")
	assert.NotContains(t, shards, queues+"/"+long)

	require.NoError(t, sh.Put(ctx, []byte("item")))
	wi, err := sh.Take(ctx)
	require.NoError(t, err)
	assert.Equal(t, "item", string(wi.Data()))
	require.NoError(t, wi.Ack(ctx))

	l.awaitChecks(t, 3)
	assert.Equal(t, int32(1), warned.n.Load(), "said once, however many checks list it")
	assert.Equal(t, shards, sh.Shards())
}

// logCount counts the log records whose message contains says.
type logCount struct {
	says string
	n    atomic.Int32
}

func (h *logCount) Enabled(context.Context, slog.Level) bool { return true }

func (h *logCount) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.says) {
		h.n.Add(1)
	}
	return nil
}

func (h *logCount) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logCount) WithGroup(string) slog.Handler      { return h }
