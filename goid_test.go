package zkrecipes

import (
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goid reads the header runtime.Stack writes for the calling goroutine.
// If the runtime changes that header, this test fails before reentrancy
// does.
func TestGoroutineIDStackHeaderIsWhatGoidReads(t *testing.T) {
	var buf [64]byte
	header := string(buf[:runtime.Stack(buf[:], false)])
	m := regexp.MustCompile(`^goroutine ([0-9]+) \[`).FindStringSubmatch(header)
	require.NotNil(t, m, "runtime.Stack header %q does not start with \"goroutine N [\"", header)
	id, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	assert.Positive(t, id)
	assert.Equal(t, id, goid())
}

func TestGoroutineIDsAreStableAndDistinct(t *testing.T) {
	me := goid()
	assert.Equal(t, me, goid())
	var wg sync.WaitGroup
	ids := make([]int64, 8)
	for i := range ids {
		wg.Add(1)
		go func() { defer wg.Done(); ids[i] = goid() }()
	}
	wg.Wait()
	seen := map[int64]bool{me: true}
	for _, id := range ids {
		assert.False(t, seen[id])
		seen[id] = true
	}
}
