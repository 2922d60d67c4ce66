package zkrecipes

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rwQueue builds sorted read-write nodes from a pattern such as "WRRW".
func rwQueue(pattern string) []queueNode {
	kids := make([]string, len(pattern))
	for i, c := range pattern {
		name := readName
		if c == 'W' {
			name = writeName
		}
		kids[i] = fmt.Sprintf("_c_%08d-0000-4000-8000-000000000000-%s%010d", i, name, i)
	}
	return sortNodes(kids, rwMarkers)
}

func TestReadPredicate(t *testing.T) {
	cases := []struct {
		queue string
		self  int
		held  bool
		watch int
	}{
		{"R", 0, true, -1},
		{"RRR", 2, true, -1},      // readers share
		{"WR", 1, false, 0},       // a reader waits for a writer ahead
		{"RWR", 2, false, 1},      // ... even behind a holding reader
		{"WRRWR", 4, false, 3},    // it watches the nearest writer ahead
		{"WRRWR", 2, false, 0},    // readers between writers wait for the first
		{"RRWRR", 1, true, -1},    // a writer behind does not block a reader
		{"WWWRRR", 5, false, 2},   // behind several writers: the last of them
		{"RRRRRRRW", 6, true, -1}, // long reader runs hold together
		{"RWRWRW", 4, false, 3},   // alternating
		{"RRRRRRRRRRRRRR", 13, true, -1},
	}
	for _, c := range cases {
		nodes := rwQueue(c.queue)
		held, watch := readPredicate(nodes, c.self)
		assert.Equal(t, c.held, held, "%s self=%d", c.queue, c.self)
		if !c.held {
			assert.Equal(t, c.watch, watch, "%s self=%d", c.queue, c.self)
		}
	}
}

func TestWritePredicateWaitsForEveryNodeAhead(t *testing.T) {
	w := maxLeasesPredicate(1)
	held, _ := w(rwQueue("W"), 0)
	assert.True(t, held)
	held, watch := w(rwQueue("RRW"), 2)
	assert.False(t, held, "readers ahead keep a writer out")
	assert.Equal(t, 1, watch)
}

// TestReadWritePredicatesNeverDeadlock checks every queue of up to 10
// readers and writers (and random longer ones): the holders are
// compatible (one writer alone, or readers only), someone always holds,
// and every waiter watches a node ahead of it, so the waits form no cycle
// (kazoo #649: a reader watched a later writer that waited for it).
func TestReadWritePredicatesNeverDeadlock(t *testing.T) {
	check := func(pattern string) {
		nodes := rwQueue(pattern)
		var writers, readers int
		for i := range nodes {
			pred := readPredicate
			if pattern[i] == 'W' {
				pred = maxLeasesPredicate(1)
			}
			held, watch := pred(nodes, i)
			if held {
				if pattern[i] == 'W' {
					writers++
				} else {
					readers++
				}
				continue
			}
			require.GreaterOrEqual(t, watch, 0, pattern)
			require.Less(t, watch, i, "%s: node %d watches a node behind it", pattern, i)
		}
		require.Positive(t, writers+readers, "%s: nobody holds", pattern)
		require.True(t, writers == 0 || (writers == 1 && readers == 0), "%s: %d writers and %d readers hold", pattern, writers, readers)
	}
	for n := 1; n <= 10; n++ {
		for bits := 0; bits < 1<<n; bits++ {
			b := make([]byte, n)
			for i := range b {
				b[i] = 'R'
				if bits&(1<<i) != 0 {
					b[i] = 'W'
				}
			}
			check(string(b))
		}
	}
	r := rand.New(rand.NewSource(1))
	for k := 0; k < 200; k++ {
		b := make([]byte, 11+r.Intn(50))
		for i := range b {
			b[i] = "RW"[r.Intn(2)]
		}
		check(string(b))
	}
}

// A downgraded read node is named with its writer's sequence: it sorts at
// the writer's place, ahead of a writer that queued after it.
func TestDowngradedReadNodeSortsAtTheWritersPlace(t *testing.T) {
	kids := []string{
		"_c_aaaaaaaa-0000-4000-8000-000000000000-__WRIT__0000000004", // holder
		"_c_bbbbbbbb-0000-4000-8000-000000000000-__WRIT__0000000005", // waiting writer
		"_c_cccccccc-0000-4000-8000-000000000000-__READ__0000000004", // the holder's downgrade
	}
	nodes := sortNodes(kids, rwMarkers)
	assert.Equal(t, kids[1], nodes[2].name, "the waiting writer sorts last")
	// Once the holder's write node is gone, the waiting writer still waits.
	rest := sortNodes([]string{kids[1], kids[2]}, rwMarkers)
	held, watch := maxLeasesPredicate(1)(rest, indexOf(rest, kids[1]))
	assert.False(t, held)
	assert.Equal(t, kids[2], rest[watch].name)
	assert.True(t, allSequential(nodes), "such a node looks sequential: the read-write lock never uses the fast handoff")
}

func TestRecipeKindsOfTheNewRecipes(t *testing.T) {
	assert.Equal(t, kindSemaphore, conflictingKind(sortNodes([]string{"locks", "leases"}, rwMarkers), kindReadWrite))
	assert.Equal(t, kindMutex, conflictingKind(sortNodes([]string{"_c_a-lock-0000000001"}, mutexMarkers), kindSemaphore))
	assert.Equal(t, "", conflictingKind(sortNodes([]string{"locks", "leases", "count"}, mutexMarkers), kindSemaphore))
	assert.Equal(t, kindReadWrite, conflictingKind(sortNodes([]string{"_c_a-__READ__0000000001"}, mutexMarkers), kindMutex))
}
