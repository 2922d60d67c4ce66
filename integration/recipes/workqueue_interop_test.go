package recipes_test

import (
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
)

// startWorkQueuePeer runs peers/java/CuratorWorkQueuePeer.java (a Curator
// 5.4 DistributedQueue) with args, skipping the test when Curator is not
// installed (failing it under CI). The process is killed when the test
// ends.
func startWorkQueuePeer(t *testing.T, args ...string) *queuePeer {
	t.Helper()
	return startCuratorQueuePeer(t, "CuratorWorkQueuePeer", args...)
}

// awaitReady waits for the work queue peer's consumer to be started (its
// READY line): the JVM's start may take long on a busy machine.
func (p *queuePeer) awaitReady(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Contains(p.stdout(), "READY\n") }, 90*time.Second, 20*time.Millisecond,
		"the Curator consumer did not start")
}

// items returns what the peer printed as consumed so far.
func (p *queuePeer) items() []string {
	var items []string
	for _, l := range strings.Split(p.stdout(), "\n") {
		if item, ok := strings.CutPrefix(l, "ITEM "); ok {
			items = append(items, item)
		}
	}
	return items
}

// curatorFrame is the data Curator's ItemSerializer writes for a batch of
// items, spelt out byte by byte.
func curatorFrame(items ...string) string {
	h := "00010001"
	for _, it := range items {
		h += fmt.Sprintf("01%08x%x", len(it), it)
	}
	return h + "02"
}

func TestWorkQueue_CuratorConsumerTakesGoPutsUnderItsLocks(t *testing.T) {
	c := server(t)
	path := testPath(t)
	ctx := ctxT(t, 120*time.Second)
	q := zr.NewWorkQueue(connect(t, c, nil).Session, path)
	var want []string
	for i := range 30 {
		want = append(want, fmt.Sprintf("go-%d", i))
		require.NoError(t, q.Put(ctx, []byte(want[i])))
	}
	require.NoError(t, q.PutMulti(ctx, [][]byte{[]byte("go-batch-0"), []byte("go-batch-1")}))
	want = append(want, "go-batch-0", "go-batch-1")

	observer := raw(t, c)
	kids := children(t, observer, path)
	slices.Sort(kids)
	require.Len(t, kids, 31)
	for _, k := range kids {
		assert.Regexp(t, `^queue-\d{10}$`, k)
	}
	first, _, err := observer.Get(path + "/" + kids[0])
	require.NoError(t, err)
	assert.Equal(t, curatorFrame("go-0"), hex.EncodeToString(first))
	batch, _, err := observer.Get(path + "/" + kids[30])
	require.NoError(t, err)
	assert.Equal(t, curatorFrame("go-batch-0", "go-batch-1"), hex.EncodeToString(batch))

	p := startWorkQueuePeer(t, "consume", c.Servers()[0], path, path+"-locks")
	require.Eventually(t, func() bool { return len(p.items()) >= len(want) }, 90*time.Second, 20*time.Millisecond,
		"the Curator consumer did not consume every item")
	got := p.items()
	slices.Sort(got)
	slices.Sort(want)
	assert.Equal(t, want, got)
	requireWorkQueueDrained(t, c, path, 30*time.Second)
	require.NoError(t, p.stdin.Close())
	p.wait(t, 60*time.Second)
}

func TestWorkQueue_GoTakesCuratorPutsInOrder(t *testing.T) {
	c := server(t)
	path := testPath(t)
	ctx := ctxT(t, 120*time.Second)
	startWorkQueuePeer(t, "put", c.Servers()[0], path, "20", "curator", "3").wait(t, 90*time.Second)

	observer := raw(t, c)
	kids := children(t, observer, path)
	slices.Sort(kids)
	require.Len(t, kids, 21)
	first, _, err := observer.Get(path + "/" + kids[0])
	require.NoError(t, err)
	assert.Equal(t, curatorFrame("curator-0"), hex.EncodeToString(first), "Curator's encoding, as read in its ItemSerializer")

	q := zr.NewWorkQueue(connect(t, c, nil).Session, path)
	for i := range 20 {
		got, err := takeAck(ctx, q)
		require.NoError(t, err)
		assert.Equal(t, []string{fmt.Sprintf("curator-%d", i)}, got)
	}
	got, err := takeAck(ctx, q)
	require.NoError(t, err)
	assert.Equal(t, []string{"curator-batch-0", "curator-batch-1", "curator-batch-2"}, got, "a putMulti is one WorkItem")
	assertWorkQueueEmpty(t, c, path)
}

// A Curator consumer skips an item a Go consumer holds, takes the others,
// and takes the held one once the Go consumer released it.
func TestWorkQueue_CuratorConsumerHonoursGoLocksAndTakesReleasedItems(t *testing.T) {
	c := server(t)
	path := testPath(t)
	ctx := ctxT(t, 120*time.Second)
	q := zr.NewWorkQueue(connect(t, c, nil).Session, path)
	held := putAndTake(t, ctx, q, "held")

	p := startWorkQueuePeer(t, "consume", c.Servers()[0], path, path+"-locks")
	p.awaitReady(t)
	require.NoError(t, q.Put(ctx, []byte("free")))
	require.Eventually(t, func() bool { return slices.Contains(p.items(), "free") }, 60*time.Second, 20*time.Millisecond)
	assert.NotContains(t, p.items(), "held", "Curator consumed an item a Go consumer held")
	select {
	case <-held.Done():
		t.Fatalf("the Go consumer lost its item: %v", held.Err())
	default:
	}

	require.NoError(t, held.Release(ctx))
	require.Eventually(t, func() bool { return slices.Contains(p.items(), "held") }, 60*time.Second, 20*time.Millisecond,
		"Curator did not take the released item")
	requireWorkQueueDrained(t, c, path, 30*time.Second)
	require.NoError(t, p.stdin.Close())
	p.wait(t, 60*time.Second)
	assert.Equal(t, []string{"free", "held"}, p.items())
}

// Go and Curator consumers share one queue fed by Go and Curator
// producers: with nobody failing, every item is consumed exactly once.
func TestWorkQueue_MixedGoAndCuratorConsumersConsumeEachItemOnce(t *testing.T) {
	c := server(t)
	path := testPath(t)
	srv := c.Servers()[0]
	ctx := ctxT(t, 180*time.Second)
	curator := startWorkQueuePeer(t, "consume", srv, path, path+"-locks")
	curator.awaitReady(t)

	consumers := startGoConsumers(t, ctx, c, path, 2)
	producer := startWorkQueuePeer(t, "put", srv, path, "100", "curator")
	gq := zr.NewWorkQueue(connect(t, c, nil).Session, path)
	var want []string
	for i := range 100 {
		item := fmt.Sprintf("go-%d", i)
		want = append(want, item, fmt.Sprintf("curator-%d", i))
		require.NoError(t, gq.Put(ctx, []byte(item)))
	}
	producer.wait(t, 90*time.Second)
	requireWorkQueueDrained(t, c, path, 90*time.Second)
	consumers.stop(t)
	goGot := consumers.taken()
	require.NoError(t, curator.stdin.Close())
	curator.wait(t, 60*time.Second)
	got := append(slices.Clone(goGot), curator.items()...)
	slices.Sort(got)
	slices.Sort(want)
	assert.Equal(t, want, got, "each item consumed exactly once")
	t.Logf("consumed by Go: %d, by Curator: %d", len(goGot), len(curator.items()))
}

// wantPriorityName is the name Curator's DistributedPriorityQueue gives an
// item of priority p, less the sequence number, worked out by hand from
// its priorityToString.
var wantPriorityName = map[string]string{
	"5": "queue-100000005", "-3": "queue-0FFFFFFFD", "0": "queue-100000000", "70000": "queue-100011170", "-1": "queue-0FFFFFFFF",
}

// checkPriorityNames checks the item nodes under path against
// wantPriorityName, by their data.
func checkPriorityNames(t *testing.T, c interface{ Observer(testing.TB) *zk.Conn }, path string) {
	t.Helper()
	observer := c.Observer(t)
	kids := children(t, observer, path)
	require.Len(t, kids, len(wantPriorityName))
	for _, k := range kids {
		data, _, err := observer.Get(path + "/" + k)
		require.NoError(t, err)
		require.Greater(t, len(data), 10)
		item := string(data[9 : len(data)-1]) // a frame of one item: version, opcode, length, item, end
		assert.Equal(t, curatorFrame(item), hex.EncodeToString(data))
		assert.Regexp(t, `^`+regexp.QuoteMeta(wantPriorityName[item])+`\d{10}$`, k, "the node of priority %s", item)
	}
}

func TestWorkQueue_GoTakesCuratorPriorityPutsLowestFirst(t *testing.T) {
	c := server(t)
	path := testPath(t)
	ctx := ctxT(t, 120*time.Second)
	startWorkQueuePeer(t, "putprio", c.Servers()[0], path, "5:5", "-3:-3", "0:0", "70000:70000", "-1:-1").wait(t, 90*time.Second)
	checkPriorityNames(t, c, path)
	q := zr.NewWorkQueue(connect(t, c, nil).Session, path)
	for _, want := range []string{"-3", "-1", "0", "5", "70000"} {
		got, err := takeAck(ctx, q)
		require.NoError(t, err)
		assert.Equal(t, []string{want}, got)
	}
}

func TestWorkQueue_CuratorPriorityConsumerTakesGoPriorityPutsLowestFirst(t *testing.T) {
	c := server(t)
	path := testPath(t)
	ctx := ctxT(t, 120*time.Second)
	q := zr.NewWorkQueue(connect(t, c, nil).Session, path)
	for _, p := range []int32{5, -3, 0, 70000, -1} {
		require.NoError(t, q.Put(ctx, []byte(fmt.Sprint(p)), zr.WithPriority(p)))
	}
	checkPriorityNames(t, c, path)
	p := startWorkQueuePeer(t, "consume", c.Servers()[0], path, path+"-locks", "priority")
	require.Eventually(t, func() bool { return len(p.items()) >= 5 }, 90*time.Second, 20*time.Millisecond)
	require.NoError(t, p.stdin.Close())
	p.wait(t, 60*time.Second)
	assert.Equal(t, []string{"-3", "-1", "0", "5", "70000"}, p.items())
}

// times returns, per item, the epoch milliseconds the peer printed on its
// lines "<kind> item ms".
func (p *queuePeer) times(kind string) map[string]int64 {
	out := map[string]int64{}
	for _, l := range strings.Split(p.stdout(), "\n") {
		var item string
		var ms int64
		if rest, ok := strings.CutPrefix(l, kind+" "); ok {
			if _, err := fmt.Sscan(rest, &item, &ms); err == nil {
				out[item] = ms
			}
		}
	}
	return out
}

func TestWorkQueue_GoDelayOrderTakesCuratorDelayedPutsWhenDue(t *testing.T) {
	c := server(t)
	path := testPath(t)
	ctx := ctxT(t, 120*time.Second)
	// Long enough that the JVM's start does not make both due at once.
	producer := startWorkQueuePeer(t, "putdelay", c.Servers()[0], path, "4000:late", "2000:soon")
	producer.wait(t, 90*time.Second)
	due := producer.times("DUE")
	require.Len(t, due, 2)
	observer := raw(t, c)
	for _, k := range children(t, observer, path) {
		assert.Regexp(t, `^queue-\|[0-9A-F]{8,}\|\d{10}$`, k)
	}
	q := zr.NewWorkQueue(connect(t, c, nil).Session, path, zr.WithDelayOrder())
	for _, want := range []string{"soon", "late"} {
		got, err := takeAck(ctx, q)
		require.NoError(t, err)
		assert.Equal(t, []string{want}, got)
		assert.GreaterOrEqual(t, time.Now().UnixMilli(), due[want], "%s taken before it was due", want)
	}
}

func TestWorkQueue_CuratorDelayConsumerTakesGoDelayedPutsWhenDue(t *testing.T) {
	c := server(t)
	path := testPath(t)
	ctx := ctxT(t, 120*time.Second)
	p := startWorkQueuePeer(t, "consume", c.Servers()[0], path, path+"-locks", "delay")
	p.awaitReady(t)
	q := zr.NewWorkQueue(connect(t, c, nil).Session, path)
	late := time.Now().Add(2 * time.Second)
	soon := time.Now().Add(time.Second)
	require.NoError(t, q.Put(ctx, []byte("late"), zr.WithDelayUntil(late)))
	require.NoError(t, q.Put(ctx, []byte("soon"), zr.WithDelayUntil(soon)))
	require.Eventually(t, func() bool { return len(p.items()) >= 2 }, 60*time.Second, 20*time.Millisecond)
	require.NoError(t, p.stdin.Close())
	p.wait(t, 60*time.Second)
	assert.Equal(t, []string{"soon", "late"}, p.items())
	at := p.times("TIME")
	assert.GreaterOrEqual(t, at["soon"], soon.UnixMilli())
	assert.GreaterOrEqual(t, at["late"], late.UnixMilli())
}

// removedCounts returns, per id, the count the peer printed on its lines
// "REMOVED id n".
func (p *queuePeer) removedCounts() map[string]int {
	out := map[string]int{}
	for _, l := range strings.Split(p.stdout(), "\n") {
		var id string
		var n int
		if rest, ok := strings.CutPrefix(l, "REMOVED "); ok {
			if _, err := fmt.Sscan(rest, &id, &n); err == nil {
				out[id] = n
			}
		}
	}
	return out
}

// checkIDNames checks that the item nodes under path are named as
// Curator's DistributedIdQueue names them: want maps each item (by its
// data) to its name less the sequence number.
func checkIDNames(t *testing.T, c interface{ Observer(testing.TB) *zk.Conn }, path string, want map[string]string) {
	t.Helper()
	observer := c.Observer(t)
	kids := children(t, observer, path)
	require.Len(t, kids, len(want))
	for _, k := range kids {
		data, _, err := observer.Get(path + "/" + k)
		require.NoError(t, err)
		require.Greater(t, len(data), 10)
		item := string(data[9 : len(data)-1])
		assert.Equal(t, curatorFrame(item), hex.EncodeToString(data))
		assert.Regexp(t, `^`+regexp.QuoteMeta(want[item])+`\d{10}$`, k, "the node of %s", item)
	}
}

// Curator's ids are taken in the order put (not in the ids' string order),
// each with its id; Curator's '_' for a '/' or '|' is the id Go sees.
func TestWorkQueue_GoTakesCuratorIDPutsInOrderWithTheirIDs(t *testing.T) {
	c := server(t)
	path := freshWorkQueue(t, c)
	ctx := ctxT(t, 120*time.Second)
	startWorkQueuePeer(t, "putid", c.Servers()[0], path, "job-b:b0", "job-a:a0", "job-b:b1", "x/y:slash", "p|q:pipe").wait(t, 90*time.Second)
	checkIDNames(t, c, path, map[string]string{
		"b0": "queue-|job-b|", "a0": "queue-|job-a|", "b1": "queue-|job-b|", "slash": "queue-|x_y|", "pipe": "queue-|p_q|",
	})
	q := zr.NewWorkQueue(connect(t, c, nil).Session, path)
	assertTakenInOrder(t, ctx, q, idItem{"b0", "job-b"}, idItem{"a0", "job-a"}, idItem{"b1", "job-b"}, idItem{"slash", "x_y"}, idItem{"pipe", "p_q"})
	assertWorkQueueEmpty(t, c, path)
}

func TestWorkQueue_CuratorIDConsumerTakesGoIDPutsInOrder(t *testing.T) {
	c := server(t)
	path := freshWorkQueue(t, c)
	ctx := ctxT(t, 120*time.Second)
	q := zr.NewWorkQueue(connect(t, c, nil).Session, path)
	putIDs(t, ctx, q, idItem{"first", "zz"}, idItem{"second", "aa"}, idItem{"third", "mm"}, idItem{"fourth", "aa"})
	checkIDNames(t, c, path, map[string]string{
		"first": "queue-|zz|", "second": "queue-|aa|", "third": "queue-|mm|", "fourth": "queue-|aa|",
	})
	p := startWorkQueuePeer(t, "consume", c.Servers()[0], path, path+"-locks", "id")
	require.Eventually(t, func() bool { return len(p.items()) >= 4 }, 90*time.Second, 20*time.Millisecond)
	requireWorkQueueDrained(t, c, path, 30*time.Second)
	require.NoError(t, p.stdin.Close())
	p.wait(t, 60*time.Second)
	assert.Equal(t, []string{"first", "second", "third", "fourth"}, p.items())
}

// Curator's remove deletes Go's items of the id, but not the one a Go
// consumer holds (it honours the Go lock, as Go's Remove honours
// Curator's); released, that one keeps its id and a second remove
// deletes it.
func TestWorkQueue_CuratorRemoveDeletesGoIDPutsButNotOneAGoConsumerHolds(t *testing.T) {
	c := server(t)
	path := freshWorkQueue(t, c)
	srv := c.Servers()[0]
	ctx := ctxT(t, 180*time.Second)
	q := zr.NewWorkQueue(connect(t, c, nil).Session, path)
	putIDs(t, ctx, q, idItem{"j0", "job"}, idItem{"j1", "job"}, idItem{"o", "other"}, idItem{"j2", "job"})
	held, err := q.Take(ctx)
	require.NoError(t, err)
	require.Equal(t, "j0", string(held.Data()))

	p := startWorkQueuePeer(t, "removeid", srv, path, path+"-locks", "job", "nobody")
	p.wait(t, 90*time.Second)
	assert.Equal(t, map[string]int{"job": 2, "nobody": 0}, p.removedCounts())
	assert.Equal(t, []string{"job", "other"}, queueIDs(t, raw(t, c), path))
	select {
	case <-held.Done():
		t.Fatalf("the Go consumer lost its item: %v", held.Err())
	default:
	}

	require.NoError(t, held.Release(ctx))
	p = startWorkQueuePeer(t, "removeid", srv, path, path+"-locks", "job")
	p.wait(t, 90*time.Second)
	assert.Equal(t, map[string]int{"job": 1}, p.removedCounts(), "the released j0, under its id")
	data, id := takeID(t, ctx, q)
	assert.Equal(t, "o", data)
	assert.Equal(t, "other", id)
	assertWorkQueueEmpty(t, c, path)
}

// Go's Remove deletes Curator's items of the id, by the id as Curator
// wrote it ('_' for a '/'), and leaves the others.
func TestWorkQueue_GoRemoveDeletesCuratorIDPuts(t *testing.T) {
	c := server(t)
	path := freshWorkQueue(t, c)
	ctx := ctxT(t, 120*time.Second)
	startWorkQueuePeer(t, "putid", c.Servers()[0], path, "job:1", "other:2", "job:3", "x/y:4").wait(t, 90*time.Second)
	q := zr.NewWorkQueue(connect(t, c, nil).Session, path)
	n, err := q.Remove(ctx, "job")
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	n, err = q.Remove(ctx, "x_y")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	data, id := takeID(t, ctx, q)
	assert.Equal(t, "2", data)
	assert.Equal(t, "other", id)
	assertWorkQueueEmpty(t, c, path)
}
