package bench

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// noLock admits every contender at once: a lock whose exclusion failed.
type noLock struct{}

func (noLock) Lock(context.Context) error   { return nil }
func (noLock) Unlock(context.Context) error { return nil }
func (noLock) Close()                       {}

// localLock is one process-local mutex shared by every contender: a lock
// that excludes.
type localLock struct{ mu *sync.Mutex }

func (l localLock) Lock(context.Context) error   { l.mu.Lock(); return nil }
func (l localLock) Unlock(context.Context) error { l.mu.Unlock(); return nil }
func (localLock) Close()                         {}

// The exclusion check is the benchmark's "violations" column: a lock that
// lets two contenders in at once must show up there, and one that excludes
// must not. Pure logic over the shared log; no server.
func TestExclusionCheck_CountsTheViolationsOfALockThatAdmitsTwo(t *testing.T) {
	ctx := context.Background()
	broken := []Locker{noLock{}, noLock{}, noLock{}, noLock{}}
	n, rep, err := runContenders(ctx, broken, time.Now().Add(200*time.Millisecond), time.Millisecond)
	require.NoError(t, err)
	assert.Greater(t, n, 0)
	assert.NotEmpty(t, rep.Violations, "four contenders inside a 1 ms section at once, none reported")

	var mu sync.Mutex
	excluding := []Locker{localLock{&mu}, localLock{&mu}, localLock{&mu}, localLock{&mu}}
	n, rep, err = runContenders(ctx, excluding, time.Now().Add(200*time.Millisecond), time.Millisecond)
	require.NoError(t, err)
	assert.Greater(t, n, 20)
	assert.Empty(t, rep.Violations, "a lock that excludes")
	logged := 0
	for _, k := range rep.Acquisitions {
		logged += k
	}
	assert.Equal(t, n, logged, "every acquisition in the log")
}
