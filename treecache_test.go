package zkrecipes

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTreeCacheRejectsBadOptionsOnStart(t *testing.T) {
	ctx := context.Background()
	s := &Session{}
	assert.ErrorIs(t, NewTreeCache(s, "/a", WithMaxDepth(-1)).Start(ctx), ErrInvalidArgument)
	assert.ErrorIs(t, NewTreeCache(s, "/a", WithPathFilter(nil)).Start(ctx), ErrInvalidArgument)
	var nilCtx context.Context
	assert.ErrorIs(t, NewTreeCache(s, "/a").Start(nilCtx), ErrInvalidArgument)
}

func TestTreeCacheClosedBeforeStartClosesEventsAndCannotStart(t *testing.T) {
	c := NewTreeCache(&Session{}, "/a")
	assert.NoError(t, c.Close(context.Background()))
	assert.NoError(t, c.Close(context.Background()), "Close is idempotent")
	_, open := <-c.Events()
	assert.False(t, open)
	assert.ErrorIs(t, c.Start(context.Background()), ErrCacheStarted)
	_, ok := c.Get("/a")
	assert.False(t, ok)
	assert.Empty(t, c.Snapshot())
}

// The event queue's merging keeps the replay exact: whatever the reader
// takes and when, applying the events it got to an empty tree gives the
// tree the events were made from, and the queue never holds more than one
// event per node the reader or the cache knows, plus the deletions.
func TestTreeCacheEventQueueReplaysToTheLastTreeWhateverTheReaderPace(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		var q eventQueue
		tree := map[string]int64{}   // path -> czxid: what the cache holds
		reader := map[string]int64{} // what replaying the delivered events gives
		zxid := int64(0)
		kids := func(p string) []string {
			var out []string
			for k := range tree {
				if parentPath(k) == p && k != p {
					out = append(out, k)
				}
			}
			return out
		}
		var remove func(p string)
		remove = func(p string) {
			for _, k := range kids(p) {
				remove(k)
			}
			q.pushNode(NodeDeleted, &CachedNode{Path: p, Stat: NodeStat{Czxid: tree[p]}})
			delete(tree, p)
		}
		take := func() {
			ev, ok := q.pop()
			if !ok {
				return
			}
			p := ev.Node.Path
			switch ev.Kind {
			case NodeCreated:
				require.NotContains(t, reader, p, "seed %d: created twice", seed)
				if p != "/r" {
					require.Contains(t, reader, parentPath(p), "seed %d: a child before its parent", seed)
				}
				reader[p] = ev.Node.Stat.Czxid
			case NodeChanged:
				require.Equal(t, reader[p], ev.Node.Stat.Czxid, "seed %d: a change of another node", seed)
			case NodeDeleted:
				require.Equal(t, reader[p], ev.Node.Stat.Czxid, "seed %d: a deletion of another node", seed)
				for k := range reader {
					require.NotEqual(t, p, parentPath(k), "seed %d: a parent deleted before its child", seed)
				}
				delete(reader, p)
			}
		}
		for range 300 {
			zxid++
			paths := []string{"/r"}
			for p := range tree {
				paths = append(paths, p)
			}
			p := paths[r.IntN(len(paths))]
			_, exists := tree[p]
			switch op := r.IntN(4); {
			case !exists && (p == "/r" || tree[parentPath(p)] != 0):
				tree[p] = zxid
				q.pushNode(NodeCreated, &CachedNode{Path: p, Stat: NodeStat{Czxid: zxid}})
			case !exists:
			case op == 0:
				remove(p)
			case op == 1 && len(p) < 12:
				c := p + "/" + strconv.Itoa(r.IntN(3))
				if _, ok := tree[c]; !ok {
					tree[c] = zxid
					q.pushNode(NodeCreated, &CachedNode{Path: c, Stat: NodeStat{Czxid: zxid}})
				}
			default:
				q.pushNode(NodeChanged, &CachedNode{Path: p, Stat: NodeStat{Czxid: tree[p], Mzxid: zxid}})
			}
			live := 0
			for _, it := range q.items[q.head:] {
				if !it.dead {
					live++
				}
			}
			require.LessOrEqual(t, live, len(tree)+len(reader), "seed %d: the queue grows past the nodes", seed)
			for range r.IntN(3) {
				take()
			}
		}
		for len(q.items) > q.head {
			take()
		}
		assert.Equal(t, tree, reader, "seed %d", seed)
	}
}

// A cached node costs one allocation of the allocator's 112-byte size
// class, not 128: most nodes are leaves, and a leaf carries no slice of
// children.
func TestTreeNodeFitsIn112Bytes(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(treeNode{}), uintptr(112))
}
