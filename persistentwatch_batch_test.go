package zkrecipes

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A cache's watch hands over every event waiting at once, in order, up to
// maxBatch, and the WatchReset owed for an overflow only after the events
// that came before it.
func TestPersistentWatchBatchesHandOverAllWaitingEventsInOrderThenTheOverflowReset(t *testing.T) {
	w := &PersistentWatch{path: "/a", backlog: maxBatch + 10, wake: make(chan struct{}, 1)}
	for i := range maxBatch + 10 {
		w.push(WatchEvent{Kind: WatchNodeCreated, Path: fmt.Sprint("/a/", i)}, false)
	}
	w.push(WatchEvent{Kind: WatchNodeCreated, Path: "/a/dropped"}, false) // beyond the backlog
	first := w.nextBatch()
	require.Len(t, first, maxBatch)
	w.push(WatchEvent{Kind: WatchNodeDeleted, Path: "/a/late"}, false) // still overflowing: dropped
	second := w.nextBatch()
	require.Len(t, second, 10)
	for i, ev := range append(first, second...) {
		assert.Equal(t, fmt.Sprint("/a/", i), ev.Path)
	}
	assert.Equal(t, []WatchEvent{{Kind: WatchReset, Path: "/a", Reset: ResetOverflow}}, w.nextBatch())
	assert.Nil(t, w.nextBatch(), "nothing waits")
	w.push(WatchEvent{Kind: WatchNodeDeleted, Path: "/a/0"}, false)
	assert.Equal(t, []WatchEvent{{Kind: WatchNodeDeleted, Path: "/a/0"}}, w.nextBatch())
}
