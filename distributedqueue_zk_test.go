package zkrecipes

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var queueItemName = regexp.MustCompile(`^qn-\d{10}$`)

func TestZKQueueTakesItemsInOfferOrderFromCuratorNodes(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	dir := "/zkt/queue-order-" + newUUID()
	q := NewQueue(s, dir)
	for i := range 5 {
		require.NoError(t, q.Offer(ctx, []byte(fmt.Sprint("item-", i))))
	}
	require.NoError(t, q.Offer(ctx, []byte{})) // an empty item is an item

	raw := zkRaw(t)
	kids, _, err := raw.Children(dir)
	require.NoError(t, err)
	require.Len(t, kids, 6)
	for _, k := range kids {
		assert.Regexp(t, queueItemName, k)
		_, st, err := raw.Get(joinPath(dir, k))
		require.NoError(t, err)
		assert.Zero(t, st.EphemeralOwner, "item nodes are persistent")
	}
	// A foreign child is skipped, as Curator skips it.
	_, err = raw.Create(joinPath(dir, "zz-foreign"), nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)

	head, err := q.Peek(ctx)
	require.NoError(t, err)
	assert.Equal(t, "item-0", string(head))
	for i := range 5 {
		item, err := q.Take(ctx)
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprint("item-", i), string(item))
	}
	item, err := q.Poll(ctx)
	require.NoError(t, err)
	assert.Empty(t, item)
	_, err = q.Poll(ctx)
	assert.ErrorIs(t, err, ErrQueueEmpty)
	_, err = q.Peek(ctx)
	assert.ErrorIs(t, err, ErrQueueEmpty)
	require.NoError(t, raw.Delete(joinPath(dir, "zz-foreign"), -1))
}

func TestZKQueuePollOnAMissingPathIsEmptyAndCreatesNothing(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	dir := "/zkt/queue-missing-" + newUUID()
	_, err := NewQueue(s, dir).Poll(ctx)
	assert.ErrorIs(t, err, ErrQueueEmpty)
	ok, _, err := zkRaw(t).Exists(dir)
	require.NoError(t, err)
	assert.False(t, ok)
}

func TestZKQueueTakeWaitsForAnOfferAndEndsWithCtx(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	dir := "/zkt/queue-wait-" + newUUID()
	q := NewQueue(s, dir)

	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err := q.Take(short)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// A Take on an empty queue, on another Session, gets an item offered
	// while it waits (the offer is made once its watch is set: the trace
	// reports the watched listing).
	watching := make(chan struct{}, 1)
	_, other := zkSession(t, 30*time.Second, WithTracer(TracerFunc(func(ev TraceEvent) {
		if ev.Op == "getChildren" && ev.Path == dir {
			select {
			case watching <- struct{}{}:
			default:
			}
		}
	})))
	got := make(chan []byte, 1)
	errc := make(chan error, 1)
	go func() {
		item, err := NewQueue(other, dir).Take(ctx)
		got <- item
		errc <- err
	}()
	for range 2 { // the unwatched listing, then the watched one
		select {
		case <-watching:
		case <-ctx.Done():
			t.Fatal("Take never listed the queue")
		}
	}
	require.NoError(t, q.Offer(ctx, []byte("late")))
	require.NoError(t, <-errc)
	assert.Equal(t, "late", string(<-got))
}

// Three Sessions, each with two goroutines taking from one Queue, take
// while two producers offer: every item is taken exactly once.
func TestZKQueueConcurrentConsumersTakeEachItemExactlyOnce(t *testing.T) {
	ctx, s := zkSession(t, 60*time.Second)
	dir := "/zkt/queue-concurrent-" + newUUID()
	const producers, perProducer, consumers = 2, 100, 3
	total := producers * perProducer

	var mu sync.Mutex
	seen := map[string]int{}
	taken := make(chan struct{}, total)
	errc := make(chan error, producers+2*consumers)
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	var q *Queue
	for c := range 2 * consumers { // two goroutines share each Queue
		if c%2 == 0 {
			_, cs := zkSession(t, 60*time.Second)
			q = NewQueue(cs, dir)
		}
		q := q
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				item, err := q.Take(cctx)
				if err != nil {
					if cctx.Err() == nil {
						errc <- fmt.Errorf("consumer %d: %w", c, err)
					}
					return
				}
				mu.Lock()
				seen[string(item)]++
				mu.Unlock()
				taken <- struct{}{}
			}
		}()
	}
	for p := range producers {
		q := NewQueue(s, dir)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perProducer {
				if err := q.Offer(ctx, []byte(fmt.Sprintf("p%d-%d", p, i))); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	for range total {
		select {
		case <-taken:
		case err := <-errc:
			t.Fatal(err)
		case <-ctx.Done():
			t.Fatalf("only %d of %d items taken", len(seen), total)
		}
	}
	stop()
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	require.Len(t, seen, total)
	for item, n := range seen {
		assert.Equal(t, 1, n, "item %s taken %d times", item, n)
	}
	assert.Empty(t, childrenOf(t, dir))
}

// A delete whose reply is lost (ZOOKEEPER-1262) ran on the server: the
// item is gone and the consumer cannot tell who removed it, so it returns
// the item flagged as uncertain rather than losing it.
func TestZKQueueLostDeleteReplyReturnsTheItemAsUncertain(t *testing.T) {
	loser := &replyLoser{}
	ctx, s := loser.session(t, 30*time.Second)
	dir := "/zkt/queue-lostdelete-" + newUUID()
	q := NewQueue(s, dir)
	require.NoError(t, q.Offer(ctx, []byte("one")))
	require.NoError(t, q.Offer(ctx, []byte("two")))

	// Lose the delete's reply (op 2: delete). The server almost always runs
	// the delete; if it dropped it with the connection, the take must have
	// taken the item again, cleanly.
	raw := zkRaw(t)
	ran := make(chan bool, 1)
	loser.loseThen("op2 "+dir+"/qn-", 1, func() {
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) {
			if kids, _, err := raw.Children(dir); err == nil && len(kids) == 1 {
				ran <- true
				return
			}
			time.Sleep(5 * time.Millisecond) // polls the server; orders nothing
		}
		ran <- false
	})
	item, err := q.Take(ctx)
	assert.Equal(t, "one", string(item))
	if <-ran {
		require.ErrorIs(t, err, ErrTakeUncertain)
	} else {
		t.Log("the server dropped the delete with its connection")
		require.NoError(t, err)
	}

	item, err = q.Take(ctx)
	require.NoError(t, err)
	assert.Equal(t, "two", string(item))
	assert.Empty(t, childrenOf(t, dir))
}

// A lost reply before the delete was sent takes nothing: the consumer
// reads the item again and takes it once.
func TestZKQueueLostReadReplyTakesTheItemOnce(t *testing.T) {
	loser := &replyLoser{}
	ctx, s := loser.session(t, 30*time.Second)
	dir := "/zkt/queue-lostread-" + newUUID()
	q := NewQueue(s, dir)
	require.NoError(t, q.Offer(ctx, []byte("one")))
	require.NoError(t, q.Offer(ctx, []byte("two")))

	loser.lose("getData "+dir+"/qn-", 1)
	loser.lose("getChildren "+dir, 1)
	for _, want := range []string{"one", "two"} {
		item, err := q.Take(ctx)
		require.NoError(t, err)
		assert.Equal(t, want, string(item))
	}
	assert.Empty(t, childrenOf(t, dir))
}

func TestZKQueueBadInputIsTypedAndCreatesNothing(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second, WithMaxRequestSize(4096))
	dir := "/zkt/queue-bad-" + newUUID()
	q := NewQueue(s, dir)

	var tooLarge *DataTooLargeError
	err := q.Offer(ctx, make([]byte, 4096))
	require.ErrorAs(t, err, &tooLarge)
	assert.ErrorIs(t, err, ErrDataTooLarge)
	assert.ErrorIs(t, q.Offer(ctx, nil), ErrInvalidArgument)
	//lint:ignore SA1012 a nil context is the bad input under test
	_, err = q.Take(nil) //nolint:staticcheck
	assert.ErrorIs(t, err, ErrInvalidArgument)

	for _, bad := range []*Queue{NewQueue(s, "relative"), NewQueue(s, dir+"/"), NewQueue(s, "/zookeeper/q")} {
		assert.ErrorIs(t, bad.Offer(ctx, []byte("x")), ErrInvalidPath)
		_, err := bad.Take(ctx)
		assert.ErrorIs(t, err, ErrInvalidPath)
		_, err = bad.Poll(ctx)
		assert.ErrorIs(t, err, ErrInvalidPath)
	}
	nilq := NewQueue(nil, dir)
	assert.ErrorIs(t, nilq.Offer(ctx, []byte("x")), ErrNilSession)
	_, err = nilq.Peek(ctx)
	assert.ErrorIs(t, err, ErrNilSession)

	ok, _, err := zkRaw(t).Exists(dir)
	require.NoError(t, err)
	assert.False(t, ok, "bad input created the queue's path")
}

// A Take whose ctx ends while its delete is in flight still returns the
// item its delete took, rather than losing it. The delete's reply is held
// back until the Take has had time to give up (a Take that gives up is a
// failure; one that waits, the contract).
func TestZKQueueTakeWhoseCtxEndsDuringTheDeleteReturnsTheItem(t *testing.T) {
	var mu sync.Mutex
	var cancelTake context.CancelFunc
	var returned chan struct{}
	ctx, s := zkSession(t, 60*time.Second, WithTracer(TracerFunc(func(ev TraceEvent) {
		if ev.Op != "delete" {
			return
		}
		mu.Lock()
		cancel, done := cancelTake, returned
		mu.Unlock()
		cancel()
		select {
		case <-done: // the Take gave up without the delete's reply
		case <-time.After(200 * time.Millisecond):
		}
	})))
	dir := "/zkt/queue-ctxdelete-" + newUUID()
	q := NewQueue(s, dir)
	for i := range 3 {
		require.NoError(t, q.Offer(ctx, []byte(fmt.Sprint(i))))
		tctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		mu.Lock()
		cancelTake, returned = cancel, done
		mu.Unlock()
		item, err := q.Take(tctx)
		close(done)
		cancel()
		require.NoError(t, err, "take %d", i)
		assert.Equal(t, fmt.Sprint(i), string(item))
	}
	assert.Empty(t, childrenOf(t, dir))
}

// A Queue remembers the rest of its last listing and takes from it without
// listing again; items another consumer takes meanwhile are skipped, and
// items offered meanwhile come after, in FIFO order.
func TestZKQueueTakesInOfferOrderWhileOthersTakeAndOffer(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	_, s2 := zkSession(t, 30*time.Second)
	dir := "/zkt/queue-interleaved-" + newUUID()
	q, other := NewQueue(s, dir), NewQueue(s2, dir)
	for i := range 5 {
		require.NoError(t, q.Offer(ctx, []byte(fmt.Sprint(i))))
	}
	take := func(q *Queue) string {
		t.Helper()
		item, err := q.Take(ctx)
		require.NoError(t, err)
		return string(item)
	}
	assert.Equal(t, "0", take(q))
	assert.Equal(t, "1", take(other))
	require.NoError(t, other.Offer(ctx, []byte("5")))
	var got []string
	for range 4 {
		got = append(got, take(q))
	}
	assert.Equal(t, []string{"2", "3", "4", "5"}, got)
	_, err := q.Poll(ctx)
	assert.ErrorIs(t, err, ErrQueueEmpty)
}

func TestZKQueueTakeWaitingWhenTheSessionClosesReturnsErrClosed(t *testing.T) {
	dir := "/zkt/queue-close-" + newUUID()
	// Close once the Take has made the path it waits on and listed it with
	// a watch (with no request in flight: go-zookeeper v1.0.4 races on a
	// request that Close interrupts).
	waiting := make(chan struct{})
	var once sync.Once
	ctx, s := zkSession(t, 30*time.Second, WithTracer(TracerFunc(func(ev TraceEvent) {
		if ev.Op == "getChildren" && ev.Path == dir && ev.Err == nil {
			once.Do(func() { close(waiting) })
		}
	})))
	errc := make(chan error, 1)
	go func() {
		_, err := NewQueue(s, dir).Take(ctx)
		errc <- err
	}()
	select {
	case <-waiting:
	case <-ctx.Done():
		t.Fatal("Take never listed the queue")
	}
	raw := zkRaw(t)
	require.NoError(t, s.Close())
	select {
	case err := <-errc:
		assert.ErrorIs(t, err, ErrClosed)
	case <-ctx.Done():
		t.Fatal("Take still waiting after Close")
	}
	require.NoError(t, raw.Delete(dir, -1))
}

// A Take that waits long gets through more connection losses than its
// retry policy allows in a row, as long as each is over before the next:
// the policy counts failures in a row, not over the Take's life.
func TestZKQueueTakeWaitingThroughSeparateConnectionLossesKeepsItsRetryBudget(t *testing.T) {
	loser := &replyLoser{}
	dir := "/zkt/queue-budget-" + newUUID()
	var listed, lost atomic.Int32
	tracer := TracerFunc(func(ev TraceEvent) {
		if ev.Op == "getChildren" && ev.Path == dir {
			if ev.Err == nil {
				listed.Add(1)
			} else {
				lost.Add(1)
			}
		}
	})
	ctx, s := loser.session(t, 60*time.Second, WithRetryPolicy(RetryNTimes(2, 10*time.Millisecond)), WithTracer(tracer))
	raw := zkRaw(t)
	_, err := raw.Create(dir, nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	q := NewQueue(s, dir)

	type took struct {
		item []byte
		err  error
	}
	got := make(chan took, 1)
	go func() {
		item, err := q.Take(ctx)
		got <- took{item, err}
	}()
	require.Eventually(t, func() bool { return listed.Load() >= 2 }, 10*time.Second, time.Millisecond, "Take waits on a watched listing")
	for i := range 4 {
		before := listed.Load()
		loser.lose("getChildren "+dir, 1)
		// A child that is no item wakes the taker, whose listing's reply is lost.
		_, err := raw.Create(fmt.Sprintf("%s/other-%d", dir, i), nil, 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
		require.Eventually(t, func() bool { return lost.Load() == int32(i+1) && listed.Load() >= before+2 }, 20*time.Second, time.Millisecond,
			"loss %d: the listing failed, then Take listed again and waits", i+1)
	}
	_, err = raw.Create(dir+"/qn-", []byte("item"), zk.FlagSequence, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	select {
	case r := <-got:
		require.NoError(t, r.err)
		assert.Equal(t, "item", string(r.item))
	case <-ctx.Done():
		t.Fatal("Take did not return the item")
	}
}
