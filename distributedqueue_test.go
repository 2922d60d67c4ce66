package zkrecipes

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestQueueItemsAreTheQnChildrenSortedAsCuratorSortsThem(t *testing.T) {
	kids := []string{"qn-0000000010", "_c_x-lock-0000000001", "qn-0000000002", "zz", "qn-0000000009"}
	assert.Equal(t, []string{"qn-0000000002", "qn-0000000009", "qn-0000000010"}, queueItems(kids, false))
	assert.Empty(t, queueItems(nil, false))
	// A cached list is used as it is.
	assert.Equal(t, []string{"b", "a"}, queueItems([]string{"b", "a"}, true))
}

func TestQueueCacheMergesRacingListingsAndIsTakenOnce(t *testing.T) {
	q := &Queue{}
	var kids []string
	assert.False(t, q.takeCache(&kids), "an empty cache")

	q.putCache([]string{"qn-3", "qn-4"})
	q.putCache([]string{"qn-2", "qn-3", "qn-5"}) // another take of the Queue, listed later
	assert.True(t, q.takeCache(&kids))
	assert.Equal(t, []string{"qn-2", "qn-3", "qn-4", "qn-5"}, kids)
	assert.False(t, q.takeCache(&kids), "taken: the next take lists")

	src := []string{"qn-7"}
	q.putCache(src)
	src[0] = "changed"
	assert.True(t, q.takeCache(&kids))
	assert.Equal(t, []string{"qn-7"}, kids, "the cache holds its own copy")
}
