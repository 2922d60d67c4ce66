package zkrecipes

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestQueueItemsAreTheQnChildrenSortedAsCuratorSortsThem(t *testing.T) {
	kids := []string{"qn-0000000010", "_c_x-lock-0000000001", "qn-0000000002", "zz", "qn-0000000009"}
	assert.Equal(t, []string{"qn-0000000002", "qn-0000000009", "qn-0000000010"}, queueItems(kids))
	assert.Empty(t, queueItems(nil))
}

func TestQueueCacheMergesRacingListingsUnderTheLowerBoundAndIsTakenOnce(t *testing.T) {
	q := &Queue{}
	var l listed
	assert.False(t, q.takeCache(&l), "an empty cache")

	q.putCache(listed{[]string{"qn-3", "qn-4"}, 20})
	q.putCache(listed{[]string{"qn-2", "qn-3", "qn-5"}, 10}) // another take of the Queue, listed earlier
	assert.True(t, q.takeCache(&l))
	assert.Equal(t, listed{[]string{"qn-2", "qn-3", "qn-4", "qn-5"}, 10}, l)
	assert.False(t, q.takeCache(&l), "taken: the next take lists")

	src := []string{"qn-7"}
	q.putCache(listed{src, 30})
	src[0] = "changed"
	assert.True(t, q.takeCache(&l))
	assert.Equal(t, listed{[]string{"qn-7"}, 30}, l, "the cache holds its own copy")

	q.putCache(listed{[]string{"qn-8"}, 40})
	q.dropCache()
	assert.False(t, q.takeCache(&l), "dropped")
}
