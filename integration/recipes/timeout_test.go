package recipes_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// acquisition takes a recipe on path and returns its release.
type acquisition func(ctx context.Context, s *zr.Session, path string) (release func(context.Context) error, err error)

// lockAcquisition is the acquisition of a locker.
func lockAcquisition(mk func(s *zr.Session, path string) locker) acquisition {
	return func(ctx context.Context, s *zr.Session, path string) (func(context.Context) error, error) {
		l, err := mk(s, path).Acquire(ctx)
		if err != nil {
			return nil, err
		}
		return l.Release, nil
	}
}

// An acquisition that ctx ends while it waits says what it waited for:
// the recipe's path is in the error, which still matches
// context.DeadlineExceeded (issue 42, defect 5). One Session holds each
// recipe while another's acquisition runs out of time behind it.
func TestTimeout_AcquisitionThatRunsOutOfTimeNamesThePath(t *testing.T) {
	c := server(t)
	writeLock := lockAcquisition(writeLockRecipe.make)
	for _, tc := range []struct {
		name        string
		hold, await acquisition
	}{
		{"Mutex", nil, lockAcquisition(mutexRecipe.make)},
		{"WriteLock", nil, writeLock},
		{"ReadLockBehindAWriter", writeLock, lockAcquisition(func(s *zr.Session, path string) locker {
			return zr.NewRWMutex(s, path).ReadLock()
		})},
		{"SemaphoreMutex", nil, lockAcquisition(semaphoreMutexRecipe.make)},
		{"MultiLock", nil, lockAcquisition(multiLockRecipe.make)},
		{"Semaphore", nil, func(ctx context.Context, s *zr.Session, path string) (func(context.Context) error, error) {
			ls, err := zr.NewSemaphore(s, path, 1).Acquire(ctx, 1)
			if err != nil {
				return nil, err
			}
			return ls[0].Release, nil
		}},
		{"Election", nil, func(ctx context.Context, s *zr.Session, path string) (func(context.Context) error, error) {
			l, err := zr.NewElection(s, path).Campaign(ctx)
			if err != nil {
				return nil, err
			}
			return l.Release, nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := testPath(t)
			ctx := ctxT(t, time.Minute)
			hold := tc.hold
			if hold == nil {
				hold = tc.await
			}
			release, err := hold(ctx, connect(t, c, nil).Session, path)
			require.NoError(t, err)

			short, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			_, err = tc.await(short, connect(t, c, nil).Session, path)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.ErrorContains(t, err, path, "the error names what waited")
			require.Regexp(t, `^zkrecipes: `, err.Error())
			require.NoError(t, release(ctx))
		})
	}
}

// An acquisition that runs out of time while its Session is cut off from
// every server says why no server answered, as Connect does: here the
// only server's address refuses connections (its proxy is gone). The
// error names the path, the server and the refusal, and matches both
// context.DeadlineExceeded and the refusal (issue 42, defect 5).
func TestTimeout_AcquisitionThatRunsOutOfTimeCutOffSaysWhyNoServerAnswered(t *testing.T) {
	c := server(t)
	path := testPath(t)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	cut := connect(t, c, []string{proxy.Addr()}, zr.WithSessionTimeout(30*time.Second))
	st := watchStates(t, cut.Session)
	require.NoError(t, proxy.Close())
	require.Equal(t, zr.StateSuspended, st.next(t, 10*time.Second, zr.StateSuspended, zr.StateLost).State)

	// Long enough for go-zookeeper to dial again (about once a second).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := zr.NewMutex(cut.Session, path).Acquire(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	require.ErrorContains(t, err, path)
	require.ErrorContains(t, err, proxy.Addr()+": dial tcp "+proxy.Addr()+": connect: connection refused")
	t.Log(err)
}
