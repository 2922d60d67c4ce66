package zkrecipes

import (
	"cmp"
	"slices"
	"strings"
)

// queueNode is one child of a recipe's path, with the key it sorts by.
type queueNode struct {
	name string
	key  string // the text after the recipe's marker, as Curator sorts
	seq  int64  // the key as a sequence number, or -1 if it is not one
}

// Sort markers. Curator sorts a lock's children by the text after the last
// occurrence of the lock name ("lock-"), or by the whole name when it is
// absent. kazoo names its nodes <hex>__lock__<seq> and <hex>__rlock__<seq>;
// sorting those by their sequence too makes kazoo's contenders wait in line
// with ours (Curator, which sorts them by their random hex, cannot).
var (
	mutexMarkers = []string{"lock-", "__lock__", "__rlock__"}
	rwMarkers    = []string{"__READ__", "__WRIT__"}
)

// sortKey strips, for each marker in turn, everything up to and including
// its last occurrence: Curator's fixForSorting, applied marker by marker.
func sortKey(name string, markers []string) string {
	// The usual name, <prefix><first marker><ten digits>: its key is the
	// digits, as the loop finds (no marker holds a digit, so none occurs
	// after the first), without scanning the name once per marker.
	if n := len(name) - 10; len(markers) > 0 && n >= len(markers[0]) &&
		name[n-len(markers[0]):n] == markers[0] && parseSeq(name[n:]) >= 0 {
		return name[n:]
	}
	for _, m := range markers {
		if i := strings.LastIndex(name, m); i >= 0 {
			name = name[i+len(m):]
		}
	}
	return name
}

// parseSeq reads a ZooKeeper sequence suffix: exactly ten decimal digits.
// A wrapped (negative) or foreign suffix gives -1.
func parseSeq(key string) int64 {
	if len(key) != 10 {
		return -1
	}
	var n int64
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int64(c-'0')
	}
	return n
}

// sortNodes sorts children the way Curator does: by key as a string,
// ties broken by name so that the order is total.
func sortNodes(children []string, markers []string) []queueNode {
	nodes := make([]queueNode, len(children))
	for i, c := range children {
		k := sortKey(c, markers)
		nodes[i] = queueNode{name: c, key: k, seq: parseSeq(k)}
	}
	slices.SortFunc(nodes, compareNodes)
	return nodes
}

// compareNodes orders two nodes by key as a string, then by name. Two
// sequence numbers (ten digits each) compare as their strings do, so they
// are compared as numbers: a contended lock lists hundreds of nodes on
// every entry, and the string comparisons were most of its sort.
func compareNodes(a, b queueNode) int {
	if a.seq >= 0 && b.seq >= 0 {
		if c := cmp.Compare(a.seq, b.seq); c != 0 {
			return c
		}
	} else if c := strings.Compare(a.key, b.key); c != 0 {
		return c
	}
	return strings.Compare(a.name, b.name)
}

func indexOf(nodes []queueNode, name string) int {
	for i, n := range nodes {
		if n.name == name {
			return i
		}
	}
	return -1
}

// allSequential reports whether every node sorts by a sequence number of
// the parent's counter. Then no node created later can sort below one
// already listed, and a waiter may trust its first listing: the nodes below
// it can only go away.
func allSequential(nodes []queueNode) bool {
	for _, n := range nodes {
		if n.seq < 0 {
			return false
		}
	}
	return true
}

// predicate decides, from the sorted children and the index of the
// caller's own node, whether the caller holds the recipe, and if not, the
// index of the node to watch.
type predicate func(nodes []queueNode, self int) (held bool, watch int)

// maxLeasesPredicate is Curator's standard driver: the first n nodes hold;
// any other watches the node n places before it (its predecessor, for a
// mutex).
func maxLeasesPredicate(n int) predicate {
	return func(_ []queueNode, self int) (bool, int) {
		if self < n {
			return true, -1
		}
		return false, self - n
	}
}

// recipe kinds, recognised from node names to detect two recipe types on
// one path.
const (
	kindMutex     = "mutex"
	kindReadWrite = "read-write lock"
	kindSemaphore = "semaphore"
	kindLatch     = "leader latch"
)

// nodeKind tells which recipe a child name belongs to ("" when unknown).
func nodeKind(name string) string {
	switch {
	case name == "locks" || name == "leases":
		return kindSemaphore
	case strings.Contains(name, "__READ__") || strings.Contains(name, "__WRIT__"):
		return kindReadWrite
	case strings.Contains(name, "-latch-"):
		return kindLatch
	case strings.Contains(name, "lock-") || strings.Contains(name, "__lock__") || strings.Contains(name, "__rlock__"):
		return kindMutex
	}
	return ""
}

// conflictingKind returns the first recipe kind other than want found
// among children, or "".
func conflictingKind(children []queueNode, want string) string {
	for _, c := range children {
		if k := nodeKind(c.name); k != "" && k != want {
			return k
		}
	}
	return ""
}
