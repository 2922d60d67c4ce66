package recipes_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
)

// Misuse that needs a server: a closed session, release twice, release
// after loss, a nil context on a live lease, a bad path on a live session.
// Each gives a typed error, never a panic or a hang, and leaves no node.
// Pure validation is tabled in the root package (badinput_test.go); a new
// recipe adds itself to badInputRecipes.

// semaphoreOne adapts a Semaphore taking one permit to the locker shape.
type semaphoreOne struct{ sem *zr.Semaphore }

func (s semaphoreOne) Acquire(ctx context.Context) (*zr.Lease, error) {
	return one(s.sem.Acquire(ctx, 1))
}
func (s semaphoreOne) TryAcquire(ctx context.Context) (*zr.Lease, error) {
	return one(s.sem.TryAcquire(ctx, 1))
}

func one(ls []*zr.Lease, err error) (*zr.Lease, error) {
	if err != nil {
		return nil, err
	}
	return ls[0], nil
}

// campaign adapts an Election: Campaign has no try form, so TryAcquire
// campaigns too.
type campaign struct{ e *zr.Election }

func (c campaign) Acquire(ctx context.Context) (*zr.Lease, error)    { return c.e.Campaign(ctx) }
func (c campaign) TryAcquire(ctx context.Context) (*zr.Lease, error) { return c.e.Campaign(ctx) }

var badInputRecipes = []struct {
	name string
	make func(s *zr.Session, path string) locker
}{
	{"Mutex", mutexRecipe.make},
	{"RWMutex/write", writeLockRecipe.make},
	{"RWMutex/read", func(s *zr.Session, p string) locker { return zr.NewRWMutex(s, p).ReadLock() }},
	{"SemaphoreMutex", semaphoreMutexRecipe.make},
	{"Semaphore", func(s *zr.Session, p string) locker { return semaphoreOne{zr.NewSemaphore(s, p, 2)} }},
	{"MultiLock", multiLockRecipe.make},
	{"Election", func(s *zr.Session, p string) locker { return campaign{zr.NewElection(s, p)} }},
}

// ephemeralsUnder counts the ephemeral nodes in the subtree at path.
func ephemeralsUnder(t *testing.T, conn *zk.Conn, path string) int {
	t.Helper()
	_, st, err := conn.Get(path)
	if err == zk.ErrNoNode {
		return 0
	}
	require.NoError(t, err)
	n := 0
	if st.EphemeralOwner != 0 {
		n++
	}
	for _, k := range children(t, conn, path) {
		n += ephemeralsUnder(t, conn, path+"/"+k)
	}
	return n
}

func TestBadInput_ClosedSessionRefusesEveryCallAndCreatesNothing(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	cl := connect(t, c, nil)
	require.NoError(t, cl.Close())
	assert.NoError(t, cl.Close(), "Close is idempotent")
	assert.ErrorIs(t, cl.Err(), zr.ErrClosed)
	ch, cancel := cl.Subscribe()
	_, open := <-ch
	assert.False(t, open, "Subscribe on a closed session returns a closed channel")
	cancel()
	ctx := ctxT(t, 20*time.Second)
	for _, r := range badInputRecipes {
		t.Run(r.name, func(t *testing.T) {
			path := testPath(t)
			lk := r.make(cl.Session, path)
			_, err := lk.Acquire(ctx)
			assert.ErrorIs(t, err, zr.ErrClosed)
			_, err = lk.TryAcquire(ctx)
			assert.ErrorIs(t, err, zr.ErrClosed)
			ok, _, err := conn.Exists(path)
			require.NoError(t, err)
			assert.False(t, ok, "no node, not even a parent, on a closed session")
		})
	}
	_, err := zr.NewMutex(cl.Session, "/x").Participants(ctx)
	assert.ErrorIs(t, err, zr.ErrClosed)
	_, err = zr.NewElection(cl.Session, "/x").Leader(ctx)
	assert.ErrorIs(t, err, zr.ErrClosed)
	_, err = zr.NewElection(cl.Session, "/x").Observe(ctx)
	assert.ErrorIs(t, err, zr.ErrClosed)
	_, err = zr.NewSemaphore(cl.Session, "/x", 2).Participants(ctx)
	assert.ErrorIs(t, err, zr.ErrClosed)
	_, err = zr.NewSemaphore(cl.Session, "/x", 2).Available(ctx)
	assert.ErrorIs(t, err, zr.ErrClosed)
}

func TestBadInput_ReleaseTwiceSaysReleased(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	cl := connect(t, c, nil)
	ctx := ctxT(t, 60*time.Second)
	for _, r := range badInputRecipes {
		t.Run(r.name, func(t *testing.T) {
			path := testPath(t)
			l, err := r.make(cl.Session, path).Acquire(ctx)
			require.NoError(t, err)
			require.NoError(t, l.Release(ctx))
			assert.ErrorIs(t, l.Release(ctx), zr.ErrReleased)
			assert.ErrorIs(t, l.Err(), zr.ErrReleased)
			assert.Zero(t, ephemeralsUnder(t, conn, path))
		})
	}
}

func TestBadInput_ReleaseAfterLossReportsTheLossAndErrKeepsIt(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	ctx := ctxT(t, 2*time.Minute)
	for _, r := range badInputRecipes {
		t.Run(r.name, func(t *testing.T) {
			cl := connect(t, c, nil)
			path := testPath(t)
			l, err := r.make(cl.Session, path).Acquire(ctx)
			require.NoError(t, err)
			cl.expire(t)
			select {
			case <-l.Done():
			case <-time.After(15 * time.Second):
				t.Fatal("holder not told of the loss")
			}
			lossErr := l.Err()
			require.ErrorIs(t, lossErr, zr.ErrLockLost)
			assert.ErrorIs(t, l.Release(ctx), zr.ErrLockLost, "release after loss reports the loss")
			assert.Equal(t, lossErr, l.Err(), "Err, like a context's, does not change once set")
			assert.ErrorIs(t, l.Release(ctx), zr.ErrReleased)
			require.Eventually(t, func() bool { return ephemeralsUnder(t, conn, path) == 0 }, 20*time.Second, 20*time.Millisecond)
		})
	}
}

func TestBadInput_ReleaseWithNilContextKeepsTheLease(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	cl := connect(t, c, nil)
	ctx := ctxT(t, 60*time.Second)
	for _, r := range badInputRecipes {
		t.Run(r.name, func(t *testing.T) {
			path := testPath(t)
			l, err := r.make(cl.Session, path).Acquire(ctx)
			require.NoError(t, err)
			var nilCtx context.Context
			assert.ErrorIs(t, l.Release(nilCtx), zr.ErrInvalidArgument)
			assert.NoError(t, l.Err(), "still held")
			require.NoError(t, l.Release(ctx))
			assert.Zero(t, ephemeralsUnder(t, conn, path))
		})
	}
}

func TestBadInput_BadPathOnALiveSessionCreatesNothing(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	cl := connect(t, c, nil)
	ctx := ctxT(t, 20*time.Second)
	rootBefore := children(t, conn, "/")
	zkBefore := children(t, conn, "/zookeeper")
	for _, r := range badInputRecipes {
		for _, p := range []string{"", "rel/ative", "/trailing/", "/zookeeper/x", "/a//b", "/"} {
			lk := r.make(cl.Session, p)
			if r.name == "MultiLock" { // its contract maker derives member paths
				lk = zr.NewMultiLock(zr.NewMutex(cl.Session, "/ok"), zr.NewMutex(cl.Session, p))
			}
			_, err := lk.Acquire(ctx)
			assert.ErrorIs(t, err, zr.ErrInvalidPath, "%s %q", r.name, p)
		}
	}
	assert.ElementsMatch(t, rootBefore, children(t, conn, "/"))
	assert.ElementsMatch(t, zkBefore, children(t, conn, "/zookeeper"))
}
