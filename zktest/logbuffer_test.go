package zktest_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// Writers and readers at once (run under -race): every line arrives whole.
func TestLogBuffer_ConcurrentWritesArriveWholeAndCount(t *testing.T) {
	var l zktest.LogBuffer
	const writers, lines = 4, 100
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range lines {
				_, err := fmt.Fprintf(&l, "writer %d line %d\n", w, i)
				assert.NoError(t, err)
			}
		}()
	}
	for l.Count("\n") < writers*lines {
		_ = l.String() // a reader beside the writers
	}
	wg.Wait()
	require.Equal(t, writers*lines, l.Count("line"))
	require.Equal(t, lines, l.Count("writer 2 "))
	for _, line := range strings.Split(strings.TrimSuffix(l.String(), "\n"), "\n") {
		require.Regexp(t, `^writer \d line \d+$`, line)
	}
}
