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
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(busy)
	for range busy {
		require.True(t, s.spawn(func() { started.Done(); <-release }))
	}
	started.Wait()
	require.Equal(t, busy, workerGoroutines())
	close(release)
	require.Eventually(t, func() bool {
		return s.workers.idle.Load() == maxIdleWorkers && workerGoroutines() == maxIdleWorkers
	}, 10*time.Second, time.Millisecond, "the workers beyond maxIdleWorkers end")

	// The next tasks run on the waiting workers: no goroutine is added.
	const again = maxIdleWorkers / 2
	hold := make(chan struct{})
	started.Add(again)
	for range again {
		require.True(t, s.spawn(func() { started.Done(); <-hold }))
	}
	started.Wait()
	require.Equal(t, maxIdleWorkers, workerGoroutines())
	close(hold)

	require.NoError(t, s.Close())
	require.Zero(t, workerGoroutines(), "Close waits for every worker")
	require.False(t, s.spawn(func() { t.Error("a task ran after Close") }))
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
