package zkrecipes

import (
	"bytes"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSessionWorkersAreReusedAtMostMaxIdleWaitAndNoneOutlivesClose(t *testing.T) {
	s := newSession(defaultSessionConfig()) // never dialled: only its workers run

	// More tasks at once than may wait idle afterwards.
	const busy = maxIdleWorkers + 24
	release := spawnBlocked(t, s, busy)
	require.Equal(t, busy, workerGoroutines())
	close(release)
	require.Eventually(t, func() bool {
		return s.workers.idle.Load() == maxIdleWorkers && workerGoroutines() == maxIdleWorkers
	}, 10*time.Second, time.Millisecond, "the workers beyond maxIdleWorkers end")

	// The next tasks run on the waiting workers: no goroutine is added.
	hold := spawnBlocked(t, s, maxIdleWorkers/2)
	require.Equal(t, maxIdleWorkers, workerGoroutines())
	close(hold)

	require.NoError(t, s.Close())
	// Every worker has left its loop before Close returns; the goroutine
	// itself may still be unwinding (its deferred Done ran), so it is
	// waited for, not counted at once.
	require.Zero(t, s.workers.idle.Load(), "Close waits for every worker")
	require.Eventually(t, func() bool { return workerGoroutines() == 0 }, 10*time.Second, time.Millisecond,
		"no worker goroutine outlives Close")
	require.False(t, s.spawn(func() { t.Error("a task ran after Close") }))
}

// spawnBlocked spawns n tasks on s, returns once all n run, and lets them
// end when the returned channel is closed.
func spawnBlocked(t *testing.T, s *Session, n int) chan struct{} {
	t.Helper()
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(n)
	for range n {
		require.True(t, s.spawn(func() { started.Done(); <-release }))
	}
	started.Wait()
	return release
}

// workerGoroutines counts the goroutines running a Session's worker loop.
func workerGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Count(buf[:n], []byte("zkrecipes.(*Session).work("))
		}
		buf = make([]byte, 2*len(buf))
	}
}
