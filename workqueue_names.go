package zkrecipes

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The names of a WorkQueue's item nodes, as Curator's DistributedQueue
// family writes them (curator-recipes, queue/): "queue-", then what the
// variant adds, then the server's 10-digit sequence number.
//
//	DistributedQueue          queue-<seq>
//	DistributedPriorityQueue  queue-<p><seq>    p: "1" and %08X of a priority >= 0,
//	                                             "0" and %08X of its 32-bit two's complement if < 0
//	DistributedDelayQueue     queue-|<due>|<seq> due: %08X of the epoch milliseconds
//	DistributedIdQueue        queue-|<id>|<seq>  id: as given, '/' and '|' refused
//
// A priority queue's consumers sort names as strings, as the plain queue's
// do; a delay queue's sort them by due time and leave the items not due;
// an id queue's sort them as strings with the "|<id>|" part cut out, so
// that ids leave the order of the sequence numbers alone.

// workItemPriority is the name part of an item of priority p.
func workItemPriority(p int32) string {
	if p >= 0 {
		return fmt.Sprintf("1%08X", uint32(p))
	}
	return fmt.Sprintf("0%08X", uint32(p))
}

// workItemDelay is the name part of an item due at ms (epoch milliseconds).
func workItemDelay(ms int64) string { return fmt.Sprintf("|%08X|", ms) }

// workItemDue reads the due time of an item's name, in epoch
// milliseconds, as Curator's delay queue does: the hexadecimal number
// between the last two '|' (the first of them not at the name's start);
// 0, due at once, when there is none.
func workItemDue(name string) int64 {
	i2 := strings.LastIndexByte(name, '|')
	if i2 <= 0 {
		return 0
	}
	i1 := strings.LastIndexByte(name[:i2], '|')
	if i1 <= 0 || i2 <= i1+1 {
		return 0
	}
	ms, err := strconv.ParseInt(name[i1+1:i2], 16, 64)
	if err != nil {
		return 0
	}
	return ms
}

// ready returns the names among kids that a take may lock now, in the
// order it tries them, and, in delay order, when the next item not yet
// due will be (zero when none).
func (q *WorkQueue) ready(kids []string, now time.Time) (names []string, next time.Time) {
	names = workItemNames(kids)
	if !q.cfg.delays {
		return names, next
	}
	nowMs := now.UnixMilli()
	due := make(map[string]int64, len(names))
	var nextMs int64
	names = slices.DeleteFunc(names, func(n string) bool {
		ms := workItemDue(n)
		due[n] = ms
		if ms > nowMs && (nextMs == 0 || ms < nextMs) {
			nextMs = ms
		}
		return ms > nowMs
	})
	// Earliest due first; equal ones by name, in the order put.
	slices.SortStableFunc(names, func(a, b string) int { return cmp.Compare(due[a], due[b]) })
	if nextMs != 0 {
		next = time.UnixMilli(nextMs)
	}
	return names, next
}

// workItemID is the name part of an item put with id (checked).
func workItemID(id string) string { return "|" + id + "|" }

// workItemIDOf reads the id of an item's name as Curator's
// DistributedIdQueue does (parseId): the text between the name's first
// '|' and the next one. ok is false when there are not two; Curator then
// takes the whole name for the id, and logs the node as bad.
func workItemIDOf(name string) (id string, ok bool) {
	_, rest, ok := strings.Cut(name, "|")
	if !ok {
		return "", false
	}
	id, _, ok = strings.Cut(rest, "|")
	if !ok {
		return "", false
	}
	return id, true
}

// workItemOrderKey is what consumers sort an item's name by: the name less
// its first "|...|" part (Curator's DistributedIdQueue sorts by this
// "cleaned" name). For a plain or a priority name it is the name itself.
func workItemOrderKey(name string) string {
	head, rest, ok := strings.Cut(name, "|")
	if !ok {
		return name
	}
	_, tail, ok := strings.Cut(rest, "|")
	if !ok {
		return name
	}
	return head + tail
}

// checkWorkItemID refuses an id that Curator's DistributedIdQueue refuses
// (an empty one), that would break the item's name or its parsing ('/',
// '|'; Curator writes '_' for them, and its remove then no longer finds
// the item by the id given), or that ZooKeeper refuses in a node name.
func checkWorkItemID(id string) error {
	bad := func(reason string) error { return fmt.Errorf("%w: %q: %s", ErrInvalidItemID, id, reason) }
	switch {
	case id == "":
		return bad("empty")
	case strings.ContainsAny(id, "/|"):
		return bad("'/' and '|' would break the item's node name; use another character ('_' is what Curator's DistributedIdQueue writes for them)")
	case !utf8.ValidString(id):
		return bad("not valid UTF-8")
	}
	for _, r := range id {
		if refusedInName(r) {
			return bad(fmt.Sprintf("ZooKeeper refuses %U in a node name", r))
		}
	}
	return nil
}
