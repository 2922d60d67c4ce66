package recipes_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// takeAck takes one item from q and acks it, returning its items.
func takeAck(ctx context.Context, q *zr.WorkQueue) ([]string, error) {
	wi, err := q.Take(ctx)
	if err != nil {
		return nil, err
	}
	var got []string
	for _, it := range wi.Items() {
		got = append(got, string(it))
	}
	return got, wi.Ack(ctx)
}

// putAndTake puts item on q and takes it back, holding it.
func putAndTake(t *testing.T, ctx context.Context, q *zr.WorkQueue, item string) *zr.WorkItem {
	t.Helper()
	require.NoError(t, q.Put(ctx, []byte(item)))
	wi, err := q.Take(ctx)
	require.NoError(t, err)
	return wi
}

// workTaken is what a Take started by takeLater returned.
type workTaken struct {
	wi  *zr.WorkItem
	err error
}

// takeLater starts a Take on q, whose result comes on the channel.
func takeLater(ctx context.Context, q *zr.WorkQueue) <-chan workTaken {
	tc := make(chan workTaken, 1)
	go func() {
		wi, err := q.Take(ctx)
		tc <- workTaken{wi, err}
	}()
	return tc
}

// lockListings counts a Session's listings of a work queue's lock path,
// which a Take makes only when every item is held, before it waits.
type lockListings struct {
	zr.BaseObserver
	dir  string
	seen atomic.Int32
}

func (l *lockListings) OpDone(_ context.Context, ev zr.OpEvent) {
	if ev.Op == "getChildren" && ev.Path == l.dir && ev.Err == nil {
		l.seen.Add(1)
	}
}

// assertWorkQueueEmpty asserts that the work queue at path has no item
// and no lock left.
func assertWorkQueueEmpty(t *testing.T, c *zktest.Cluster, path string) {
	t.Helper()
	observer := raw(t, c)
	assert.Empty(t, children(t, observer, path), "items left")
	assert.Empty(t, children(t, observer, path+"-locks"), "locks left")
}

// requireWorkQueueDrained waits, up to d, until the work queue at path
// has no item and no lock left (consumers of another process are at work).
func requireWorkQueueDrained(t *testing.T, c *zktest.Cluster, path string, d time.Duration) {
	t.Helper()
	observer := raw(t, c)
	require.Eventually(t, func() bool {
		return len(children(t, observer, path)) == 0 && len(children(t, observer, path+"-locks")) == 0
	}, d, 20*time.Millisecond, "items or locks left")
}

// goConsumers are n Go consumers of a work queue, each on a Session of
// its own, taking and acking until stopped.
type goConsumers struct {
	mu     sync.Mutex
	got    []string
	wg     sync.WaitGroup
	errc   chan error
	cancel context.CancelFunc
}

func startGoConsumers(t *testing.T, ctx context.Context, c *zktest.Cluster, path string, n int) *goConsumers {
	t.Helper()
	g := &goConsumers{errc: make(chan error, n)}
	ctx, g.cancel = context.WithCancel(ctx)
	t.Cleanup(g.cancel)
	for range n {
		q := zr.NewWorkQueue(connect(t, c, nil).Session, path)
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			for {
				items, err := takeAck(ctx, q)
				if err != nil {
					if ctx.Err() == nil {
						g.errc <- err
					}
					return
				}
				g.mu.Lock()
				g.got = append(g.got, items...)
				g.mu.Unlock()
			}
		}()
	}
	return g
}

// taken returns the items acked so far.
func (g *goConsumers) taken() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.got)
}

// stop ends the consumers and reports, on t, the errors they met before.
func (g *goConsumers) stop(t *testing.T) {
	t.Helper()
	g.cancel()
	g.wg.Wait()
	close(g.errc)
	for err := range g.errc {
		t.Error(err)
	}
}

func TestWorkQueue_SeveralConsumersTakeEachItemOnce(t *testing.T) {
	c := server(t)
	path := testPath(t)
	ctx := ctxT(t, 90*time.Second)
	producer := zr.NewWorkQueue(connect(t, c, nil).Session, path)
	var want []string
	for i := range 60 {
		want = append(want, fmt.Sprintf("item-%d", i))
		require.NoError(t, producer.Put(ctx, []byte(want[i])))
	}
	batch := [][]byte{[]byte("batch-0"), []byte("batch-1"), []byte("batch-2")}
	require.NoError(t, producer.PutMulti(ctx, batch))
	want = append(want, "batch-0", "batch-1", "batch-2")

	consumers := startGoConsumers(t, ctx, c, path, 4)
	require.Eventually(t, func() bool { return len(consumers.taken()) >= len(want) }, 60*time.Second, 10*time.Millisecond)
	consumers.stop(t)
	taken := consumers.taken()
	slices.Sort(taken)
	slices.Sort(want)
	assert.Equal(t, want, taken, "every item taken exactly once")
	assertWorkQueueEmpty(t, c, path)
}

func TestWorkQueue_AckLeavesNoNodeAndEndsTheItem(t *testing.T) {
	c := server(t)
	path := testPath(t)
	ctx := ctxT(t, 30*time.Second)
	q := zr.NewWorkQueue(connect(t, c, nil).Session, path)
	wi := putAndTake(t, ctx, q, "job")
	assert.Equal(t, "job", string(wi.Data()))
	assert.Regexp(t, `^queue-\d{10}$`, wi.Name())
	observer := raw(t, c)
	assert.Equal(t, []string{wi.Name()}, children(t, observer, path+"-locks"), "the item's lock, named as the item")
	assert.NoError(t, wi.Err())

	require.NoError(t, wi.Ack(ctx))
	select {
	case <-wi.Done():
	default:
		t.Fatal("Done still open after Ack")
	}
	assert.ErrorIs(t, wi.Err(), zr.ErrReleased)
	assert.ErrorIs(t, wi.Ack(ctx), zr.ErrReleased, "a second Ack")
	assertWorkQueueEmpty(t, c, path)
}

func TestWorkQueue_ReleaseRequeuesTheItemAtTheTail(t *testing.T) {
	c := server(t)
	path := testPath(t)
	ctx := ctxT(t, 30*time.Second)
	q := zr.NewWorkQueue(connect(t, c, nil).Session, path)
	require.NoError(t, q.Put(ctx, []byte("a")))
	require.NoError(t, q.Put(ctx, []byte("b")))

	first, err := q.Take(ctx)
	require.NoError(t, err)
	require.Equal(t, "a", string(first.Data()))
	require.NoError(t, first.Release(ctx))
	assert.ErrorIs(t, first.Err(), zr.ErrReleased)

	got, err := takeAck(ctx, q)
	require.NoError(t, err)
	assert.Equal(t, []string{"b"}, got)
	again, err := q.Take(ctx)
	require.NoError(t, err)
	assert.Equal(t, "a", string(again.Data()), "the released item, back at the tail")
	assert.NotEqual(t, first.Name(), again.Name(), "requeued under a new sequence number")
	assert.Greater(t, again.Token(), first.Token())

	// The released take is stale: its check fails a transaction.
	_, err = connect(t, c, nil).Multi(ctx, first.Check(), zr.CreateOp(path+"-effect", nil, zr.WithMode(zr.ModeEphemeral)))
	assert.ErrorIs(t, err, zr.ErrItemLost)
	require.NoError(t, again.Ack(ctx))
	assertWorkQueueEmpty(t, c, path)
}

// A consumer whose session expires is told (Done, Err), its item goes to
// the consumer waiting in Take, and its stale take is refused: its Check
// fails a transaction and its Ack changes nothing.
func TestWorkQueue_ExpiredConsumerIsToldAndItsItemIsTakenAgain(t *testing.T) {
	c := server(t)
	path := testPath(t)
	ctx := ctxT(t, 60*time.Second)
	a := connect(t, c, nil)
	qa := zr.NewWorkQueue(a.Session, path)
	stale := putAndTake(t, ctx, qa, "job")

	// B's Take waits: it has listed the lock path to watch the held
	// item's lock, and has not taken the locked item.
	lists := &lockListings{dir: path + "-locks"}
	b := connect(t, c, nil, zr.WithObserver(lists))
	qb := zr.NewWorkQueue(b.Session, path)
	tc := takeLater(ctx, qb)
	require.Eventually(t, func() bool { return lists.seen.Load() > 0 }, 30*time.Second, 5*time.Millisecond,
		"the waiting Take watches the lock path")
	select {
	case r := <-tc:
		t.Fatalf("took a locked item: %v, %v", r.wi, r.err)
	default:
	}

	a.expire(t)
	select {
	case <-stale.Done():
	case <-ctx.Done():
		t.Fatal("the expired consumer was not told")
	}
	assert.ErrorIs(t, stale.Err(), zr.ErrLockLost)
	r := <-tc
	require.NoError(t, r.err)
	assert.Equal(t, "job", string(r.wi.Data()))
	assert.Equal(t, stale.Name(), r.wi.Name(), "the same item, taken again")
	assert.Greater(t, r.wi.Token(), stale.Token())

	_, err := b.Multi(ctx, stale.Check(), zr.CreateOp(path+"-effect", nil, zr.WithMode(zr.ModeEphemeral)))
	assert.ErrorIs(t, err, zr.ErrItemLost, "a stale take's check")
	_, err = b.Multi(ctx, r.wi.Check(), zr.CreateOp(path+"-effect", nil, zr.WithMode(zr.ModeEphemeral)))
	assert.NoError(t, err, "the current take's check")
	assert.ErrorIs(t, stale.Ack(ctx), zr.ErrItemLost, "a stale take's Ack")
	require.NoError(t, r.wi.Ack(ctx))
	assertWorkQueueEmpty(t, c, path)
}

func TestWorkQueue_PutWaitsForRoomUnderMaxItems(t *testing.T) {
	c := server(t)
	path := testPath(t)
	ctx := ctxT(t, 30*time.Second)
	q := zr.NewWorkQueue(connect(t, c, nil).Session, path, zr.WithMaxItems(2))
	require.NoError(t, q.Put(ctx, []byte("1")))
	require.NoError(t, q.Put(ctx, []byte("2")))
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, q.Put(short, []byte("3")), context.DeadlineExceeded, "a full queue")
	assert.Len(t, children(t, raw(t, c), path), 2)

	put := make(chan error, 1)
	go func() { put <- q.Put(ctx, []byte("3")) }()
	got, err := takeAck(ctx, zr.NewWorkQueue(connect(t, c, nil).Session, path))
	require.NoError(t, err)
	assert.Equal(t, []string{"1"}, got)
	require.NoError(t, <-put, "Put once there was room")
	for _, want := range []string{"2", "3"} {
		got, err := takeAck(ctx, q)
		require.NoError(t, err)
		assert.Equal(t, []string{want}, got)
	}
}

func TestWorkQueue_BadInputIsRefusedBeforeAnyCall(t *testing.T) {
	c := server(t)
	s := connect(t, c, nil).Session
	ctx := ctxT(t, 10*time.Second)
	assert.ErrorIs(t, zr.NewWorkQueue(s, "/q", zr.WithMaxItems(0)).Put(ctx, []byte("x")), zr.ErrInvalidArgument)
	assert.ErrorIs(t, zr.NewWorkQueue(s, "/q", zr.WithLockPath("/q/locks")).Put(ctx, []byte("x")), zr.ErrInvalidArgument)
	assert.ErrorIs(t, zr.NewWorkQueue(s, "q").Put(ctx, []byte("x")), zr.ErrInvalidPath)
	assert.ErrorIs(t, zr.NewWorkQueue(nil, "/q").Put(ctx, []byte("x")), zr.ErrNilSession)
	q := zr.NewWorkQueue(s, testPath(t))
	assert.ErrorIs(t, q.Put(ctx, nil), zr.ErrInvalidArgument)
	assert.ErrorIs(t, q.PutMulti(ctx, nil), zr.ErrInvalidArgument)
	//lint:ignore SA1012 a nil context is the bad input under test
	_, err := q.Take(nil)
	assert.ErrorIs(t, err, zr.ErrInvalidArgument)
}

func TestWorkQueue_DelayOrderTakesNoItemBeforeItIsDue(t *testing.T) {
	c := server(t)
	path := testPath(t)
	ctx := ctxT(t, 30*time.Second)
	q := zr.NewWorkQueue(connect(t, c, nil).Session, path, zr.WithDelayOrder())
	late := time.Now().Add(1500 * time.Millisecond)
	soon := time.Now().Add(400 * time.Millisecond)
	require.NoError(t, q.Put(ctx, []byte("late"), zr.WithDelayUntil(late)))
	require.NoError(t, q.Put(ctx, []byte("soon"), zr.WithDelayUntil(soon)))
	require.NoError(t, q.Put(ctx, []byte("now")))
	for _, want := range []struct {
		item string
		due  time.Time
	}{{"now", time.Time{}}, {"soon", soon}, {"late", late}} {
		got, err := takeAck(ctx, q)
		require.NoError(t, err)
		assert.Equal(t, []string{want.item}, got)
		assert.GreaterOrEqual(t, time.Now().UnixMilli(), want.due.UnixMilli(), "%s taken before it was due", want.item)
	}
}

func TestWorkQueue_PriorityItemsComeOutLowestFirst(t *testing.T) {
	c := server(t)
	path := testPath(t)
	ctx := ctxT(t, 30*time.Second)
	q := zr.NewWorkQueue(connect(t, c, nil).Session, path)
	for _, p := range []int32{5, -3, 0, 70000, -1} {
		require.NoError(t, q.Put(ctx, []byte(fmt.Sprint(p)), zr.WithPriority(p)))
	}
	assert.ErrorIs(t, q.Put(ctx, []byte("x"), zr.WithPriority(1), zr.WithDelayUntil(time.Now())), zr.ErrInvalidArgument)
	for _, want := range []string{"-3", "-1", "0", "5", "70000"} {
		got, err := takeAck(ctx, q)
		require.NoError(t, err)
		assert.Equal(t, []string{want}, got)
	}
}

// A consumer cut off from the server is told at once (under the default
// LossPolicy), its lock goes once it is back, and the item goes to the
// consumer waiting in Take; the cut-off consumer's Ack then changes
// nothing.
func TestWorkQueue_SuspendedConsumerIsToldAndItsItemGoesToAnother(t *testing.T) {
	c := server(t)
	path := testPath(t)
	ctx := ctxT(t, 60*time.Second)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	qa := zr.NewWorkQueue(connect(t, c, []string{proxy.Addr()}).Session, path)
	cut := putAndTake(t, ctx, qa, "job")

	qb := zr.NewWorkQueue(connect(t, c, nil).Session, path)
	tc := takeLater(ctx, qb)

	proxy.Blackhole()
	select {
	case <-cut.Done():
	case <-ctx.Done(): // a busy machine may take long to see the connection go
		t.Fatal("the cut-off consumer was not told")
	}
	assert.ErrorIs(t, cut.Err(), zr.ErrLockLost)
	assert.ErrorIs(t, cut.Err(), zr.ErrSuspended)
	proxy.Heal()

	var r workTaken
	select {
	case r = <-tc:
	case <-ctx.Done():
		t.Fatal("the item did not go to the waiting consumer")
	}
	require.NoError(t, r.err)
	assert.Equal(t, cut.Name(), r.wi.Name())
	assert.Greater(t, r.wi.Token(), cut.Token())
	assert.ErrorIs(t, cut.Ack(ctx), zr.ErrItemLost, "the cut-off consumer's Ack")
	require.NoError(t, r.wi.Ack(ctx))
	assertWorkQueueEmpty(t, c, path)
}

// A take that gives up (its ctx ends) while every item is held by another
// consumer returns ctx's error and leaves no lock of its own.
func TestWorkQueue_CancelledTakeReturnsAndLeavesNoLock(t *testing.T) {
	c := server(t)
	path := testPath(t)
	ctx := ctxT(t, 30*time.Second)
	qa := zr.NewWorkQueue(connect(t, c, nil).Session, path)
	held := putAndTake(t, ctx, qa, "job")

	b := connect(t, c, nil)
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	_, err := zr.NewWorkQueue(b.Session, path).Take(short)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	observer := raw(t, c)
	assert.Equal(t, []string{held.Name()}, children(t, observer, path+"-locks"), "only the holder's lock")
	select {
	case <-held.Done():
		t.Fatalf("the holder lost its item: %v", held.Err())
	default:
	}
	require.NoError(t, held.Ack(ctx))
	empty, cancel2 := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel2()
	_, err = zr.NewWorkQueue(b.Session, path).Take(empty)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "an empty queue")
	assert.Empty(t, children(t, observer, path+"-locks"))
}

// A consumer that closes its Session while holding an item is told
// (ErrClosed), and the item, still queued, goes to another consumer.
func TestWorkQueue_ClosedConsumerLeavesItsItemForAnother(t *testing.T) {
	c := server(t)
	path := testPath(t)
	ctx := ctxT(t, 30*time.Second)
	a := connect(t, c, nil)
	qa := zr.NewWorkQueue(a.Session, path)
	wi := putAndTake(t, ctx, qa, "job")
	require.NoError(t, a.Close())
	select {
	case <-wi.Done():
	default:
		t.Fatal("Done still open after Close")
	}
	assert.ErrorIs(t, wi.Err(), zr.ErrClosed)
	got, err := takeAck(ctx, zr.NewWorkQueue(connect(t, c, nil).Session, path))
	require.NoError(t, err)
	assert.Equal(t, []string{"job"}, got)
	assertWorkQueueEmpty(t, c, path)
}

// A take that ends by its ctx while every item is held leaves no lock, and
// nothing that follows the queue: the one-shot watches it was waiting on
// (go-zookeeper cannot remove them) fire at the next change and are not
// set again, so the server's watch count comes back to where it was.
func TestWorkQueue_TakeEndedByCtxLeavesNoLockAndNoWatchFollowed(t *testing.T) {
	server(t)            // the suite's backend must be available
	c := zktest.Start(t) // a server of its own: mntr counts every session's watches
	path := testPath(t)
	ctx := ctxT(t, 60*time.Second)
	watches := func() int { total, _ := serverWatches(t, c, 0); return total }
	a, b := connect(t, c, nil), connect(t, c, nil)
	qa := zr.NewWorkQueue(a.Session, path)
	require.NoError(t, qa.Put(ctx, []byte("job")))
	before := watches() // the Sessions' own, none of the queue's
	held, err := qa.Take(ctx)
	require.NoError(t, err)

	short, cancel := context.WithCancel(ctx)
	defer cancel()
	took := make(chan error, 1)
	go func() {
		_, err := zr.NewWorkQueue(b.Session, path).Take(short)
		took <- err
	}()
	require.Eventually(t, func() bool { return watches() >= before+2 }, 30*time.Second, 20*time.Millisecond,
		"the take waits on the queue's and the locks' children")
	cancel()
	require.ErrorIs(t, <-took, context.Canceled)
	assert.Equal(t, []string{held.Name()}, children(t, raw(t, c), path+"-locks"), "only the holder's lock")

	require.NoError(t, held.Ack(ctx)) // deletes the item and its lock: both watches fire
	require.Eventually(t, func() bool { return watches() <= before }, 30*time.Second, 20*time.Millisecond,
		"a watch of the ended take is still followed")
}

// A Put whose ctx ends while its create is on its way (the server has
// made the item, its reply is held) says the outcome is unknown, and the
// item stays in the queue, for a consumer may already have it: a Put
// never takes back an item it may have enqueued.
func TestWorkQueue_PutWhoseCtxEndsOnTheWayIsOutcomeUnknownAndTheItemStays(t *testing.T) {
	c := server(t)
	path := testPath(t)
	ctx := ctxT(t, 60*time.Second)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	cl := connect(t, c, []string{proxy.Addr()}, zr.WithSessionTimeout(30*time.Second))
	q := zr.NewWorkQueue(cl.Session, path)
	require.NoError(t, q.Put(ctx, []byte("first"))) // the queue's path exists

	f := proxy.HoldRequestReply(1) // the create's: applied, its reply withheld
	short, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- q.Put(short, []byte("second")) }()
	select {
	case <-f.Hit():
	case <-ctx.Done():
		t.Fatal("the create's reply never came")
	}
	cancel()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		t.Fatal("Put did not return when its ctx ended")
	}
	f.Release()
	require.ErrorIs(t, err, zr.ErrOutcomeUnknown)
	require.ErrorIs(t, err, context.Canceled)

	consumer := zr.NewWorkQueue(connect(t, c, nil).Session, path)
	var got []string
	for range 2 {
		items, err := takeAck(ctx, consumer)
		require.NoError(t, err)
		got = append(got, items...)
	}
	assert.Equal(t, []string{"first", "second"}, got, "the item put stays in the queue")
	assertWorkQueueEmpty(t, c, path)
}

// A take whose lock's create was applied but whose reply is lost, and
// whose ctx ends before the connection is back (cancelFirst: before the
// connection goes), leaves no lock of its live session once the
// connection is back, however long it was away: the item goes to the
// next consumer.
func TestWorkQueue_TakeCutOffFromItsLockReplyLeavesNoLockAfterALongOutage(t *testing.T) {
	for _, cancelFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("cancelFirst=%v", cancelFirst), func(t *testing.T) {
			c, path := cutOffFromReplyThroughAnOutage(t, cancelFirst, context.Canceled,
				func(ctx context.Context, q *zr.WorkQueue) error { return q.Put(ctx, []byte("job")) },
				func(ctx context.Context, q *zr.WorkQueue) error {
					wi, err := q.Take(ctx)
					if wi != nil {
						err = fmt.Errorf("took %s with the reply held", wi.Name())
					}
					return err
				})
			other := zr.NewWorkQueue(connect(t, c, nil).Session, path)
			items, err := takeAck(ctxT(t, 30*time.Second), other)
			require.NoError(t, err)
			assert.Equal(t, []string{"job"}, items)
		})
	}
}

// cutOffFromReplyThroughAnOutage puts an item into a fresh WorkQueue
// (put), takes and releases it (the lock path then exists, so op's
// transaction is its second request), and runs op with the transaction
// applied but its reply held. op's ctx ends before the connection goes
// (cancelFirst) or after; op must fail with want. The client is kept away
// 3 s, longer than the 2 s the background clean-up used to wait and well
// within the session's 30 s. It returns once no lock is left, having
// checked the session lived through the outage.
func cutOffFromReplyThroughAnOutage(t *testing.T, cancelFirst bool, want error,
	put, op func(ctx context.Context, q *zr.WorkQueue) error) (*zktest.Cluster, string) {
	t.Helper()
	c := server(t)
	path := freshWorkQueue(t, c)
	ctx := ctxT(t, 120*time.Second)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	cl := connect(t, c, []string{proxy.Addr()}, zr.WithSessionTimeout(30*time.Second))
	sid := cl.Session.SessionID()
	q := zr.NewWorkQueue(cl.Session, path)
	require.NoError(t, put(ctx, q))
	wi, err := q.Take(ctx)
	require.NoError(t, err)
	require.NoError(t, wi.Release(ctx))

	f := proxy.HoldRequestReply(2) // the transaction's: applied, its reply held
	short, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- op(short, q) }()
	select {
	case <-f.Hit():
	case <-ctx.Done():
		t.Fatal("the transaction's reply never came")
	}
	ended := func() {
		cancel()
		select {
		case err := <-done:
			require.ErrorIs(t, err, want)
		case <-ctx.Done():
			t.Fatal("the call did not return when its ctx ended")
		}
	}
	if cancelFirst {
		ended()
	}
	proxy.Blackhole() // the client cannot reconnect...
	proxy.ResetAll()  // ...once the connection with the held reply goes
	require.Eventually(t, func() bool { return cl.Session.State() == zr.StateSuspended }, 60*time.Second,
		10*time.Millisecond, "the client did not see the connection go")
	if !cancelFirst {
		ended()
	}
	time.Sleep(3 * time.Second) // the outage's length, not an ordering
	proxy.Heal()

	obs := raw(t, c)
	require.Eventually(t, func() bool { return len(children(t, obs, path+"-locks")) == 0 }, 30*time.Second,
		20*time.Millisecond, "the cut-off call's lock stays while its session lives")
	assert.Equal(t, sid, cl.Session.SessionID(), "the session lived through the outage")
	return c, path
}
