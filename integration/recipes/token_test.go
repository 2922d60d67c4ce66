package recipes_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
)

// leaseKind is what a lease of an RWMutex is, for the fence.
type leaseKind int

const (
	writeLease leaseKind = iota
	readLease
	downgradedLease // a read lease taken by the holder of the write lease
)

func (k leaseKind) String() string {
	return [...]string{"write", "read", "downgraded read"}[k]
}

// fence is a resource guarded by fencing tokens that trusts exactly what
// Lease.Token promises for the leases of one RWMutex path: a write lease's
// token is above every token granted before it; a downgraded read lease
// has its write lease's token; any other read lease's token is above that
// of every write or downgraded lease granted before it. Each holder writes
// once, right after its grant and while it holds (a downgraded lease while
// its write lease is still held too), so wherever the promise orders two
// leases, their writes come in grant order.
type fence struct {
	mu       sync.Mutex
	top      int64 // the newest token of any lease
	topWrite int64 // the newest token of a write or downgraded lease
	writes   int
	log      []string // every write, in order
	refused  []string
}

// write is a holder's write; writer is the token of the write lease a
// downgraded lease came from.
func (f *fence) write(who string, kind leaseKind, token, writer int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ok bool
	switch kind {
	case writeLease:
		ok = token > f.top
	case downgradedLease:
		ok = token >= f.top && token == writer
	case readLease:
		ok = token > f.topWrite
	}
	entry := fmt.Sprintf("%s (%s) %d", who, kind, token)
	f.writes++
	f.log = append(f.log, entry)
	if !ok {
		f.refused = append(f.refused, fmt.Sprintf("%s after newest %d, newest write %d", entry, f.top, f.topWrite))
	}
	f.top = max(f.top, token)
	if kind != readLease {
		f.topWrite = max(f.topWrite, token)
	}
}

func (f *fence) check(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.refused) > 0 {
		n := len(f.log)
		t.Errorf("tokens went down in grant order: the fence refused %d of %d holders, first %s",
			len(f.refused), f.writes, strings.Join(f.refused[:min(5, len(f.refused))], "; "))
		t.Logf("the last writes: %s", strings.Join(f.log[max(0, n-40):], ", "))
	}
}

// outcome is how one contender's Acquire and Release ended.
type outcome struct {
	who string
	err error
}

// contend acquires l in the background, writes to f while holding, holds
// for hold and releases, and tells out how that went.
func contend(ctx context.Context, f *fence, out chan<- outcome, who string, l *zr.RWLock, kind leaseKind, hold time.Duration) {
	go func() {
		lease, err := l.Acquire(ctx)
		if err == nil {
			f.write(who, kind, lease.Token(), 0)
			time.Sleep(hold)
			err = lease.Release(ctx)
		}
		out <- outcome{who, err}
	}()
}

// await collects the outcomes of started, failing the test on any error and naming the
// contenders whose Acquire never returned.
func await(t *testing.T, ctx context.Context, out <-chan outcome, started []string) {
	t.Helper()
	left := map[string]bool{}
	for _, w := range started {
		left[w] = true
	}
	for len(left) > 0 {
		select {
		case o := <-out:
			assert.NoError(t, o.err, o.who)
			delete(left, o.who)
		case <-ctx.Done():
			t.Fatalf("Acquire or Release never returned for %v", left)
		}
	}
}

// A downgraded read lease sits in token order where it sits in grant
// order: at its write lease's token, below every lease that queued behind
// the write lease before the downgrade and is granted after it.
func TestTokenDowngradeCarriesTheWriteLeaseTokenBetweenEarlierAndLaterLeases(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, 30*time.Second)
	f := &fence{}
	d := connect(t, c, nil)

	early, err := zr.NewRWMutex(connect(t, c, nil).Session, path).ReadLock().Acquire(ctx)
	require.NoError(t, err)
	f.write("early reader", readLease, early.Token(), 0)
	require.NoError(t, early.Release(ctx))

	rw := zr.NewRWMutex(d.Session, path)
	w, err := rw.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	f.write("writer", writeLease, w.Token(), 0)

	type granted struct {
		l   *zr.Lease
		err error
	}
	reader, writer := make(chan granted, 1), make(chan granted, 1)
	go func() {
		l, err := zr.NewRWMutex(connect(t, c, nil).Session, path).ReadLock().Acquire(ctx)
		reader <- granted{l, err}
	}()
	require.Eventually(t, func() bool { return len(children(t, conn, path)) == 2 }, 10*time.Second, time.Millisecond)
	go func() {
		l, err := zr.NewRWMutex(connect(t, c, nil).Session, path).WriteLock().Acquire(ctx)
		writer <- granted{l, err}
	}()
	require.Eventually(t, func() bool { return len(children(t, conn, path)) == 3 }, 10*time.Second, time.Millisecond)

	r, err := rw.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	f.write("downgraded", downgradedLease, r.Token(), w.Token())
	assert.Equal(t, w.Token(), r.Token(), "the downgraded lease has its write lease's token")
	require.NoError(t, w.Release(ctx))

	g := <-reader
	require.NoError(t, g.err)
	f.write("queued reader", readLease, g.l.Token(), 0)
	assert.Greater(t, g.l.Token(), r.Token(), "a reader granted after the downgrade")
	require.NoError(t, g.l.Release(ctx))
	require.NoError(t, r.Release(ctx))

	g = <-writer
	require.NoError(t, g.err)
	f.write("queued writer", writeLease, g.l.Token(), 0)
	require.NoError(t, g.l.Release(ctx))
	f.check(t)
	assert.Empty(t, children(t, conn, path), "no node left")
}

// Downgrades under varied company and timing: exclusive or shared holders
// before the downgrader, readers and writers queued behind its write lease
// in varied order, readers and writers joining while it downgrades, the
// write lease released at once or after the joiners queued, a writer (and
// sometimes a reader) after. On one path throughout, the fence must never
// refuse a holder, every Acquire must return, and no node may be left.
func TestTokenDowngradeNeverGoesDownInGrantOrder(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, 3*time.Minute)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 25))
	jitter := func() time.Duration { return time.Duration(rng.IntN(3000)) * time.Microsecond }
	f := &fence{}
	d := connect(t, c, nil)
	pool := make([]*zr.Session, 4)
	for i := range pool {
		pool[i] = connect(t, c, nil).Session
	}
	session := func() *zr.Session { return pool[rng.IntN(len(pool))] }
	nodes := func() int { return len(children(t, conn, path)) }
	queued := func(n int, why string) {
		t.Helper()
		require.Eventually(t, func() bool { return nodes() == n }, 10*time.Second, time.Millisecond, why)
	}

	const rounds = 24
	for i := 0; i < rounds; i++ {
		out := make(chan outcome, 16)
		var started []string
		start := func(who string, write bool, hold time.Duration) {
			rw := zr.NewRWMutex(session(), path)
			l, kind := rw.ReadLock(), readLease
			if write {
				l, kind = rw.WriteLock(), writeLease
			}
			started = append(started, who)
			contend(ctx, f, out, who, l, kind, hold)
		}

		// Holders before the downgrader: a writer, two readers, or none.
		var before []*zr.Lease
		for j := 0; j < [...]int{1, 2, 0, 0}[i%4]; j++ {
			rw := zr.NewRWMutex(session(), path)
			l, kind := rw.ReadLock(), readLease
			if i%4 == 0 {
				l, kind = rw.WriteLock(), writeLease
			}
			lease, err := l.Acquire(ctx)
			require.NoError(t, err)
			f.write(fmt.Sprintf("r%d before %d", i, j), kind, lease.Token(), 0)
			before = append(before, lease)
		}

		// The downgrader: write lease, then read lease, then releases
		// the write lease when told to, holds on and releases the read
		// lease.
		wHeld, downgradeNow := make(chan struct{}), make(chan struct{})
		downgraded, releaseW := make(chan struct{}), make(chan struct{})
		dWho := fmt.Sprintf("r%d downgrader", i)
		dOut := make(chan outcome, 1)
		dHold := jitter()
		// step waits for the downgrader to reach a step, failing the
		// test if it stopped before.
		step := func(c <-chan struct{}, what string) {
			t.Helper()
			select {
			case <-c:
			case o := <-dOut:
				t.Fatalf("%s stopped before it %s: %v", o.who, what, o.err)
			case <-ctx.Done():
				t.Fatalf("%s never %s", dWho, what)
			}
		}
		go func() {
			err := func() error {
				rw := zr.NewRWMutex(d.Session, path)
				w, err := rw.WriteLock().Acquire(ctx)
				if err != nil {
					return err
				}
				f.write(dWho, writeLease, w.Token(), 0)
				close(wHeld)
				<-downgradeNow
				r, err := rw.ReadLock().Acquire(ctx)
				if err != nil {
					return err
				}
				f.write(dWho, downgradedLease, r.Token(), w.Token())
				close(downgraded)
				<-releaseW
				if err := w.Release(ctx); err != nil {
					return err
				}
				time.Sleep(dHold)
				return r.Release(ctx)
			}()
			dOut <- outcome{dWho, err}
		}()
		if len(before) > 0 {
			queued(len(before)+1, "the downgrader queues behind the holders before it")
			for _, l := range before {
				require.NoError(t, l.Release(ctx))
			}
		}
		step(wHeld, "got the write lease")

		// Queued behind the write lease before the downgrade, one at a
		// time in a shuffled order: writers and readers.
		behind := make([]bool, i%3+(i/2)%3) // true: a writer
		for j := range behind {
			behind[j] = j < i%3
		}
		rng.Shuffle(len(behind), func(a, b int) { behind[a], behind[b] = behind[b], behind[a] })
		for j, write := range behind {
			start(fmt.Sprintf("r%d queued %d", i, j), write, jitter())
			queued(2+j, "a contender queues behind the write lease")
		}

		// Joining as the downgrade happens.
		joiners := i%2 + (i/4)%2
		for j := 0; j < joiners; j++ {
			start(fmt.Sprintf("r%d joining %d", i, j), false, jitter())
		}
		if i%5 == 0 {
			joiners++
			start(fmt.Sprintf("r%d joining writer", i), true, jitter())
		}
		close(downgradeNow)
		step(downgraded, "got the downgraded read lease")
		switch i % 3 {
		case 0: // release the write lease at once
		case 1:
			time.Sleep(jitter())
		case 2: // once everyone queued beside the two leases
			queued(2+len(behind)+joiners, "the joiners queue")
		}
		close(releaseW)
		await(t, ctx, out, started)
		await(t, ctx, dOut, []string{dWho})

		// Exclusive (and shared) acquisitions after.
		after := []bool{true}
		if i%2 == 1 {
			after = append(after, false)
		}
		for j, write := range after {
			rw := zr.NewRWMutex(session(), path)
			l, kind := rw.ReadLock(), readLease
			if write {
				l, kind = rw.WriteLock(), writeLease
			}
			lease, err := l.Acquire(ctx)
			require.NoError(t, err)
			f.write(fmt.Sprintf("r%d after %d", i, j), kind, lease.Token(), 0)
			require.NoError(t, lease.Release(ctx))
		}
		require.Eventually(t, func() bool { return nodes() == 0 }, 10*time.Second, time.Millisecond, "round %d left nodes behind", i)
	}
	f.check(t)
	t.Logf("%d rounds, %d fenced writes", rounds, f.writes)
}
