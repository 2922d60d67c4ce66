package recipes_test

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
)

// sharderPeer is peers/java/CuratorQueueSharderPeer.java (a Curator 5.4
// QueueSharder) running.
type sharderPeer struct{ *queuePeer }

// startSharderPeer runs the Curator QueueSharder peer with args, skipping
// the test when Curator is not installed (failing it under CI), and
// waits for its READY line. The process is killed when the test ends.
func startSharderPeer(t *testing.T, args ...string) *sharderPeer {
	t.Helper()
	p := &sharderPeer{startCuratorQueuePeer(t, "CuratorQueueSharderPeer", args...)}
	p.awaitLines(t, "READY", 1)
	return p
}

// lines returns the peer's output lines that start with prefix.
func (p *sharderPeer) lines(prefix string) []string {
	var out []string
	for _, l := range strings.Split(p.stdout(), "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// awaitLines waits until the peer has printed n lines starting with
// prefix, and returns the last one.
func (p *sharderPeer) awaitLines(t *testing.T, prefix string, n int) string {
	t.Helper()
	require.Eventually(t, func() bool { return len(p.lines(prefix)) >= n }, 90*time.Second, 10*time.Millisecond,
		"the Curator sharder did not print %q", prefix)
	l := p.lines(prefix)
	return l[n-1]
}

// run sends the produce peer a command and waits for its answer, the
// n-th line starting with answer.
func (p *sharderPeer) run(t *testing.T, cmd, answer string, n int) string {
	t.Helper()
	_, err := io.WriteString(p.stdin, cmd+"\n")
	require.NoError(t, err)
	return p.awaitLines(t, answer, n)
}

// latchNode is the name of a LeaderLatch participant's node, Curator's
// and an Election's alike.
const latchNode = `^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-latch-\d{10}$`

// A Curator QueueSharder leads and adds the shards; a Go sharder on the
// same paths follows: it learns of the shard Curator made at its start
// and of those Curator adds later, adds none itself, and takes every item
// Curator put, on every shard.
func TestQueueSharder_GoFollowsTheShardsCuratorAddsAndTakesCuratorsItems(t *testing.T) {
	c := server(t)
	queues, leader := sharderPaths(t, c)
	ctx := ctxT(t, 180*time.Second)
	p := startSharderPeer(t, "produce", c.Servers()[0], queues, leader, "5", "100", "3")
	observer := raw(t, c)
	made := children(t, observer, queues)
	require.Len(t, made, 1, "Curator's sharder made a first shard")
	assert.Regexp(t, shardName, made[0])

	require.Eventually(t, func() bool { return len(children(t, observer, leader)) == 1 }, 60*time.Second, 10*time.Millisecond,
		"Curator's LeaderLatch campaigns")
	gc := connect(t, c, nil)
	g := startSharder(t, ctx, gc.Session, queues, leader, fastChecks(5, 3)...)
	assert.Equal(t, []string{queues + "/" + made[0]}, g.Shards(), "Start learns Curator's shard")
	require.Eventually(t, func() bool { return len(children(t, observer, leader)) == 2 }, 60*time.Second, 10*time.Millisecond,
		"both sharders campaign on the leader path")
	for _, n := range children(t, observer, leader) {
		assert.Regexp(t, latchNode, n)
	}
	var n int
	lead, err := zr.NewElection(gc.Session, leader).Leader(ctx)
	require.NoError(t, err)
	require.NotEqual(t, gc.SessionID(), lead.SessionID, "Curator leads")

	p.run(t, "put 6 curator", "PUT ", 1)
	n, err = strconv.Atoi(strings.TrimPrefix(p.run(t, "wait 2", "SHARDS ", 1), "SHARDS "))
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, 2, "Curator's leader adds a shard past the threshold")
	require.Eventually(t, func() bool {
		want := children(t, observer, queues)
		for i := range want {
			want[i] = queues + "/" + want[i]
		}
		slices.Sort(want)
		return len(want) >= 2 && slices.Equal(want, g.Shards())
	}, 60*time.Second, 10*time.Millisecond, "the Go sharder learns of the shards Curator added")
	p.run(t, "put 4 late", "PUT ", 2)
	t.Logf("Curator made %d shards", len(g.Shards()))

	var got []string
	for range 10 {
		wi, err := g.Take(ctx)
		require.NoError(t, err)
		got = append(got, string(wi.Data()))
		require.NoError(t, wi.Ack(ctx))
	}
	assert.ElementsMatch(t, append(queueItems("curator", 6), queueItems("late", 4)...), got)
	for _, s := range g.Shards() {
		assert.Empty(t, children(t, observer, s), "items left in %s", s)
	}
	require.NoError(t, p.stdin.Close())
	p.wait(t, 60*time.Second)
	assert.Equal(t, "DONE 10", p.awaitLines(t, "DONE ", 1))
}

// A Go sharder leads and adds the shards; a Curator QueueSharder whose
// DistributedQueues lock under the Go sharder's lock paths joins the
// election behind it, learns of every shard and consumes every item put
// through the Go sharder, those put before it started and while it runs.
func TestQueueSharder_CuratorConsumesWhatGoPutsOnEveryShard(t *testing.T) {
	c := server(t)
	queues, leader := sharderPaths(t, c)
	ctx := ctxT(t, 180*time.Second)
	cl := connect(t, c, nil)
	g := startSharder(t, ctx, cl.Session, queues, leader, fastChecks(5, 3)...)
	var want []string
	put := func(prefix string, n int) {
		for _, item := range queueItems(prefix, n) {
			require.NoError(t, g.Put(ctx, []byte(item)))
			want = append(want, item)
		}
	}
	put("go", 6)
	require.Eventually(t, func() bool { return len(g.Shards()) >= 2 }, 60*time.Second, 10*time.Millisecond,
		"the Go leader adds a shard past the threshold")
	put("go-more", 4)
	observer := raw(t, c)
	full := 0
	for _, s := range g.Shards() {
		if len(children(t, observer, s)) > 0 {
			full++
		}
	}
	require.GreaterOrEqual(t, full, 2, "items on two shards or more")

	p := startSharderPeer(t, "consume", c.Servers()[0], queues, leader, queues+"-locks", "5", "100", "3")
	election := zr.NewElection(cl.Session, leader)
	require.Eventually(t, func() bool { ps, err := election.Participants(ctx); return err == nil && len(ps) == 2 }, 60*time.Second,
		10*time.Millisecond, "Curator's LeaderLatch joins the election")
	lead, err := election.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, cl.SessionID(), lead.SessionID, "the Go sharder still leads")
	for _, n := range children(t, observer, leader) {
		assert.Regexp(t, latchNode, n)
	}
	require.Eventually(t, func() bool { return len(p.items()) >= len(want) }, 90*time.Second, 10*time.Millisecond,
		"Curator consumed the items put before it started")
	put("go-live", 5)
	require.Eventually(t, func() bool { return len(p.items()) >= len(want) }, 90*time.Second, 10*time.Millisecond,
		"Curator consumed the items put while it runs")
	assert.ElementsMatch(t, want, p.items(), "each item consumed once")
	require.Eventually(t, func() bool {
		for _, s := range g.Shards() {
			if len(children(t, observer, s)) > 0 || len(children(t, observer, queues+"-locks/"+strings.TrimPrefix(s, queues+"/"))) > 0 {
				return false
			}
		}
		return true
	}, 30*time.Second, 10*time.Millisecond, "items or locks left")
	require.NoError(t, p.stdin.Close())
	p.wait(t, 60*time.Second)
	assert.Equal(t, fmt.Sprintf("DONE %d", len(want)), p.awaitLines(t, "DONE ", 1))
}

// Go and Curator consumers on one sharded queue share its items: each
// item put, on any shard, is consumed once, by one of them.
func TestQueueSharder_GoAndCuratorConsumersTakeEachItemOnce(t *testing.T) {
	c := server(t)
	queues, leader := sharderPaths(t, c)
	ctx := ctxT(t, 180*time.Second)
	g := startSharder(t, ctx, connect(t, c, nil).Session, queues, leader, fastChecks(5, 3)...)
	var want []string
	for _, item := range queueItems("early", 6) {
		require.NoError(t, g.Put(ctx, []byte(item)))
		want = append(want, item)
	}
	require.Eventually(t, func() bool { return len(g.Shards()) >= 2 }, 60*time.Second, 10*time.Millisecond,
		"the Go leader adds a shard past the threshold")

	consumer := startSharder(t, ctx, connect(t, c, nil).Session, queues, leader, fastChecks(5, 3)...)
	cctx, stop := context.WithCancel(ctx)
	taken := make(chan []string, 1)
	go func() {
		var got []string
		defer func() { taken <- got }()
		for {
			wi, err := consumer.Take(cctx)
			if err != nil {
				return
			}
			got = append(got, string(wi.Data()))
			if err := wi.Ack(ctx); err != nil {
				got = append(got, "ack failed: "+err.Error())
			}
		}
	}()
	p := startSharderPeer(t, "consume", c.Servers()[0], queues, leader, queues+"-locks", "5", "100", "3")
	for _, item := range queueItems("mixed", 40) {
		require.NoError(t, g.Put(ctx, []byte(item)))
		want = append(want, item)
	}
	observer := raw(t, c)
	require.Eventually(t, func() bool {
		for _, s := range g.Shards() {
			if len(children(t, observer, s)) > 0 {
				return false
			}
		}
		return true
	}, 90*time.Second, 10*time.Millisecond, "items left")
	require.NoError(t, p.stdin.Close())
	p.wait(t, 60*time.Second)
	stop()
	goGot := <-taken
	curatorGot := p.items()
	t.Logf("%d items: %d taken by the Go consumer, %d by Curator's, over %d shards", len(want), len(goGot), len(curatorGot), len(g.Shards()))
	assert.ElementsMatch(t, want, append(slices.Clone(goGot), curatorGot...), "each item consumed once, by one side")
}
