package zkrecipes

import (
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestZKAtomicCounterAddsInCuratorsFormat(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	dir := "/zkt/atomic-" + newUUID()
	path := dir + "/n"
	t.Cleanup(func() { _ = raw.Delete(path, -1) })
	c := NewAtomicCounter(s, path)

	v, err := c.Get(ctx)
	require.NoError(t, err)
	assert.Zero(t, v, "a missing counter reads as 0")
	ok, _, err := raw.Exists(dir)
	require.NoError(t, err)
	assert.False(t, ok, "Get creates nothing")

	r, err := c.Add(ctx, 5)
	require.NoError(t, err)
	assert.Equal(t, AtomicResult{Succeeded: true, PreValue: 0, PostValue: 5}, r)
	r, err = c.Decrement(ctx)
	require.NoError(t, err)
	assert.Equal(t, AtomicResult{Succeeded: true, PreValue: 5, PostValue: 4}, r)
	data, _, err := raw.Get(path)
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0, 0, 0, 0, 0, 0, 4}, data, "Curator's format: 8-byte big-endian long")

	r, err = c.CompareAndSet(ctx, 3, 10)
	require.NoError(t, err)
	assert.Equal(t, AtomicResult{Succeeded: false, PreValue: 4, PostValue: 4}, r, "a CompareAndSet on another value changes nothing")
	r, err = c.CompareAndSet(ctx, 4, 10)
	require.NoError(t, err)
	assert.Equal(t, AtomicResult{Succeeded: true, PreValue: 4, PostValue: 10}, r)
	r, err = c.Set(ctx, -1)
	require.NoError(t, err)
	assert.Equal(t, AtomicResult{Succeeded: true, PreValue: 10, PostValue: -1}, r)
	v, err = c.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(-1), v)
}

func TestZKAtomicCounterOnANodeThatIsNotALongFailsWithErrBadAtomicLong(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	path := "/zkt/atomic-" + newUUID()
	_, err := raw.Create(path, []byte{0, 0, 0, 7}, 0, zk.WorldACL(zk.PermAll)) // a SharedCount
	require.NoError(t, err)
	t.Cleanup(func() { _ = raw.Delete(path, -1) })

	c := NewAtomicCounter(s, path)
	_, err = c.Get(ctx)
	require.ErrorIs(t, err, ErrBadAtomicLong)
	_, err = c.Increment(ctx)
	require.ErrorIs(t, err, ErrBadAtomicLong)
	_, err = c.CompareAndSet(ctx, 7, 8)
	require.ErrorIs(t, err, ErrBadAtomicLong)
	data, _, err := raw.Get(path)
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0, 0, 7}, data, "a node that is not a counter is left as it is")
}

// Eight sessions increment one counter at once for a while: the final
// value is the number of increments that reported success, with the
// optimistic tries alone and with the promoted lock.
func TestZKAtomicCounterConcurrentIncrementsAreNeverLost(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts func(lock string) []CounterOption
	}{
		{"optimistic", func(string) []CounterOption {
			return []CounterOption{WithOptimisticRetry(RetryForever(time.Millisecond))}
		}},
		{"promoted", func(lock string) []CounterOption {
			return []CounterOption{WithOptimisticRetry(NoRetry()), WithPromotedLock(lock)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := zkRaw(t)
			dir := "/zkt/atomic-" + newUUID()
			path, lock := dir+"/n", dir+"/lock"
			t.Cleanup(func() { _ = raw.Delete(path, -1) })
			const sessions = 8
			var wg sync.WaitGroup
			var mu sync.Mutex
			succeeded, failed := 0, 0
			var errs []error
			stop := time.Now().Add(2 * time.Second)
			for i := 0; i < sessions; i++ {
				ctx, s := zkSession(t, 60*time.Second)
				c := NewAtomicCounter(s, path, tc.opts(lock)...)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for time.Now().Before(stop) {
						r, err := c.Increment(ctx)
						mu.Lock()
						switch {
						case err == nil && r.Succeeded:
							succeeded++
						case err != nil:
							failed++
							errs = append(errs, err)
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			for _, err := range errs {
				require.ErrorIs(t, err, ErrRetriesExhausted, "the only failure is giving up")
			}
			ctx, s := zkSession(t, 10*time.Second)
			v, err := NewAtomicCounter(s, path).Get(ctx)
			require.NoError(t, err)
			assert.Equal(t, int64(succeeded), v, "the counter equals the number of successful increments")
			assert.Greater(t, succeeded, sessions)
			if tc.name == "promoted" {
				assert.Zero(t, failed, "under the promoted lock no increment gives up")
			}
			t.Logf("%d increments succeeded, %d gave up", succeeded, failed)
		})
	}
}

// When its optimistic tries give up, a promoted counter queues for a
// Curator-format mutex on the lock path, and changes the counter once it
// holds it.
func TestZKAtomicCounterPromotedLockWaitsForTheLockThenAdds(t *testing.T) {
	raw := zkRaw(t)
	dir := "/zkt/atomic-" + newUUID()
	path, lock := dir+"/n", dir+"/lock"
	t.Cleanup(func() { _ = raw.Delete(path, -1) })
	var once sync.Once
	// Another client writes right after the counter's first read, so its
	// one optimistic try loses.
	ctx, s := zkSession(t, 30*time.Second, WithTracer(TracerFunc(func(ev TraceEvent) {
		if ev.Op == "getData" && ev.Path == path {
			once.Do(func() {
				_, err := raw.Create(path, []byte{0, 0, 0, 0, 0, 0, 0, 9}, 0, zk.WorldACL(zk.PermAll))
				if err != nil {
					t.Errorf("raw create: %v", err)
				}
			})
		}
	})))
	require.NoError(t, s.ensureParents(ctx, dir))
	_, other := zkSession(t, 30*time.Second)
	held, err := NewMutex(other, lock).Acquire(ctx)
	require.NoError(t, err)

	c := NewAtomicCounter(s, path, WithOptimisticRetry(NoRetry()), WithPromotedLock(lock))
	type res struct {
		r   AtomicResult
		err error
	}
	got := make(chan res, 1)
	go func() {
		r, err := c.Add(ctx, 1)
		got <- res{r, err}
	}()
	require.Eventually(t, func() bool {
		kids, _, err := raw.Children(lock)
		return err == nil && len(kids) == 2
	}, 10*time.Second, 5*time.Millisecond, "the promoted change queues for the lock")
	kids, _, err := raw.Children(lock)
	require.NoError(t, err)
	for _, k := range kids {
		assert.Regexp(t, `^_c_[0-9a-f-]{36}-lock-\d{10}$`, k, "InterProcessMutex's node name")
	}
	select {
	case r := <-got:
		t.Fatalf("the promoted change returned while another client held the lock: %+v", r)
	default:
	}
	require.NoError(t, held.Release(ctx))
	r := <-got
	require.NoError(t, r.err)
	assert.Equal(t, AtomicResult{Succeeded: true, PreValue: 9, PostValue: 10}, r.r)
	require.Eventually(t, func() bool {
		kids, _, err := raw.Children(lock)
		return err == zk.ErrNoNode || (err == nil && len(kids) == 0)
	}, 10*time.Second, 5*time.Millisecond, "the lock is released after the change")
}
