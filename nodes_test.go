package zkrecipes

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func names(nodes []queueNode) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.name
	}
	return out
}

func TestSortKeyMatchesCuratorAndUnderstandsKazoo(t *testing.T) {
	cases := map[string]string{
		"_c_0f1e2d3c-aaaa-4bbb-8ccc-123456789abc-lock-0000000007": "0000000007", // Curator, zkrecipes
		"_c_0123456789abcdef0123456789abcdef-lock-0000000003":     "0000000003", // go-zookeeper
		"0123456789abcdef0123456789abcdef__lock__0000000005":      "0000000005", // kazoo Lock
		"0123456789abcdef0123456789abcdef__rlock__0000000009":     "0000000009", // kazoo ReadLock
		"foreign": "foreign", // whole name when no marker, as Curator
	}
	for name, want := range cases {
		assert.Equal(t, want, sortKey(name, mutexMarkers), name)
	}
	assert.Equal(t, "0000000002", sortKey("_c_x-__READ__0000000002", rwMarkers))
	assert.Equal(t, "0000000004", sortKey("_c_x-__WRIT__0000000004", rwMarkers))
}

func TestSortNodesOrdersEveryPeerBySequence(t *testing.T) {
	got := sortNodes([]string{
		"_c_b-lock-0000000003",
		"ffff__lock__0000000001",
		"_c_a-lock-0000000002",
		"0000__lock__0000000004",
	}, mutexMarkers)
	assert.Equal(t, []string{"ffff__lock__0000000001", "_c_a-lock-0000000002", "_c_b-lock-0000000003", "0000__lock__0000000004"}, names(got))
	assert.True(t, allSequential(got))
}

func TestWrappedOrForeignNodesDisableTheFastPath(t *testing.T) {
	wrapped := sortNodes([]string{"_c_a-lock-0000000002", "_c_b-lock--000000001"}, mutexMarkers)
	assert.False(t, allSequential(wrapped))
	// A wrapped (negative) sequence sorts first, as it does in Curator.
	assert.Equal(t, "_c_b-lock--000000001", wrapped[0].name)
	assert.False(t, allSequential(sortNodes([]string{"_c_a-lock-0000000002", "operator-note"}, mutexMarkers)))
}

func TestParseSeq(t *testing.T) {
	assert.Equal(t, int64(42), parseSeq("0000000042"))
	assert.Equal(t, int64(2147483647), parseSeq("2147483647"))
	for _, s := range []string{"", "42", "-000000001", "00000000x1", "00000000001"} {
		assert.Equal(t, int64(-1), parseSeq(s), s)
	}
}

func TestMaxLeasesPredicate(t *testing.T) {
	mutex := maxLeasesPredicate(1)
	held, _ := mutex(nil, 0)
	assert.True(t, held)
	held, watch := mutex(nil, 3)
	assert.False(t, held)
	assert.Equal(t, 2, watch, "a waiter watches its immediate predecessor")

	three := maxLeasesPredicate(3)
	held, _ = three(nil, 2)
	assert.True(t, held)
	held, watch = three(nil, 4)
	assert.False(t, held)
	assert.Equal(t, 1, watch)
}

func TestRecipeConflictIsDetectedFromNodeNames(t *testing.T) {
	mixed := sortNodes([]string{"_c_a-lock-0000000001", "_c_b-__WRIT__0000000002"}, mutexMarkers)
	assert.Equal(t, kindReadWrite, conflictingKind(mixed, kindMutex))
	assert.Equal(t, kindSemaphore, conflictingKind(sortNodes([]string{"leases", "locks"}, mutexMarkers), kindMutex))
	assert.Equal(t, kindLatch, conflictingKind(sortNodes([]string{"_c_a-latch-0000000001"}, mutexMarkers), kindMutex))
	assert.Equal(t, "", conflictingKind(sortNodes([]string{"_c_a-lock-0000000001", "abc__lock__0000000002", "note"}, mutexMarkers), kindMutex))
}

func FuzzSortNodes(f *testing.F) {
	f.Add("_c_a-lock-0000000002", "x__lock__0000000001", "lock-")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		nodes := sortNodes([]string{a, b, c}, mutexMarkers)
		if len(nodes) != 3 {
			t.Fatal("lost a node")
		}
		for i := 1; i < len(nodes); i++ {
			if nodes[i-1].key > nodes[i].key {
				t.Fatalf("not sorted: %q", names(nodes))
			}
		}
		_ = conflictingKind(nodes, kindMutex)
		_ = allSequential(nodes)
	})
}

// Sequence numbers compared as numbers order nodes exactly as their keys
// compared as strings do, Curator's order, also among foreign keys.
func TestSortNodes_NumericSequencesKeepCuratorsStringOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var names []string
	for i := range 2000 {
		switch i % 4 {
		case 0, 1:
			names = append(names, fmt.Sprintf("_c_%08x-lock-%010d", r.Uint32(), r.IntN(100)))
		case 2:
			names = append(names, fmt.Sprintf("%x__lock__%010d", r.Uint32(), r.IntN(2147483647)))
		default:
			names = append(names, fmt.Sprintf("foreign-%d", r.IntN(1000))) // no sequence: sorts by name
		}
	}
	got := sortNodes(names, mutexMarkers)
	for i := 1; i < len(got); i++ {
		a, b := got[i-1], got[i]
		if a.key > b.key || a.key == b.key && a.name > b.name {
			t.Fatalf("%q (key %q) sorted before %q (key %q)", a.name, a.key, b.name, b.key)
		}
	}
}

// The shortcut for the usual name finds the key the marker-by-marker
// strip finds, for every marker set and for names built to confuse it.
func TestSortKey_UsualNamesGetTheKeyTheFullStripGives(t *testing.T) {
	full := func(name string, markers []string) string {
		for _, m := range markers {
			if i := strings.LastIndex(name, m); i >= 0 {
				name = name[i+len(m):]
			}
		}
		return name
	}
	r := rand.New(rand.NewPCG(3, 4))
	parts := []string{"_c_", "lock-", "__lock__", "__rlock__", "__READ__", "__WRIT__", "-latch-", "0", "0000000001", "x", "-"}
	for range 20000 {
		var b strings.Builder
		for range r.IntN(6) {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		fmt.Fprintf(&b, "%010d", r.IntN(1000))
		name := b.String()
		for _, ms := range [][]string{mutexMarkers, rwMarkers} {
			if got, want := sortKey(name, ms), full(name, ms); got != want {
				t.Fatalf("sortKey(%q, %q) = %q, want %q", name, ms, got, want)
			}
		}
	}
}

// BenchmarkSortNodes512: one listing of a contended lock at 512 sessions,
// in Curator's names, sorted as every entrant sorts it.
func BenchmarkSortNodes512(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	names := make([]string, 512)
	for i, p := range r.Perm(512) {
		names[i] = fmt.Sprintf("_c_%08x-%04x-4%03x-8%03x-%012x-lock-%010d", r.Uint32(), r.IntN(1<<16), r.IntN(1<<12), r.IntN(1<<12), r.Int64N(1<<48), 100000+p)
	}
	b.ReportAllocs()
	for b.Loop() {
		sortNodes(names, mutexMarkers)
	}
}
