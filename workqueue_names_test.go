package zkrecipes

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The expected names are Curator's: DistributedPriorityQueue.priorityToString
// ("1" or "0", then %08X of the int as unsigned 32 bits) and
// DistributedDelayQueue.epochToString ('|', %08X of the epoch ms, '|'),
// worked out by hand from its source.
func TestWorkQueueNames_PriorityAsCuratorWritesIt(t *testing.T) {
	for p, want := range map[int32]string{
		0:              "100000000",
		5:              "100000005",
		70000:          "100011170",
		math.MaxInt32:  "17FFFFFFF",
		-1:             "0FFFFFFFF",
		-3:             "0FFFFFFFD",
		math.MinInt32:  "080000000",
		-math.MaxInt32: "080000001",
	} {
		if got := workItemPriority(p); got != want {
			t.Errorf("priority %d: %q, want %q", p, got, want)
		}
	}
}

func TestWorkQueueNames_PrioritiesSortLowestFirst(t *testing.T) {
	ps := []int32{7, -2, 0, math.MinInt32, 1 << 20, -1, math.MaxInt32}
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = workItemPrefix + workItemPriority(p) + "0000000001"
	}
	slices.Sort(names)
	slices.Sort(ps)
	for i, p := range ps {
		if want := workItemPrefix + workItemPriority(p) + "0000000001"; names[i] != want {
			t.Fatalf("sorted names %q do not follow priorities %v", names, ps)
		}
	}
}

func TestWorkQueueNames_DelayAsCuratorWritesAndReadsIt(t *testing.T) {
	if got := workItemDelay(1); got != "|00000001|" {
		t.Errorf("delay 1: %q", got)
	}
	if got := workItemDelay(0x18C2E4A5B00); got != "|18C2E4A5B00|" {
		t.Errorf("delay 0x18C2E4A5B00: %q", got)
	}
	for name, want := range map[string]int64{
		"queue-|0000ABCD|0000000001":      0xABCD,
		"queue-|18C2E4A5B00|0000000007":   0x18C2E4A5B00,
		"queue-0000000001":                0, // no delay: due at once
		"queue-||0000000001":              0, // nothing between the bars
		"|0000ABCD|0000000001":            0, // Curator wants the first bar past the name's start
		"queue-|zz|0000000001":            0, // not hexadecimal
		"queue-|id|x|00000010|0000000002": 0x10,
	} {
		if got := workItemDue(name); got != want {
			t.Errorf("due of %q: %#x, want %#x", name, got, want)
		}
	}
}

func TestWorkQueueNames_DelayOrderTakesDueItemsEarliestFirst(t *testing.T) {
	now := time.UnixMilli(0x1000)
	name := func(ms int64, seq string) string { return workItemPrefix + workItemDelay(ms) + seq }
	kids := []string{
		name(0x0900, "0000000001"),
		name(0x2000, "0000000002"), // not due
		name(0x0800, "0000000003"),
		"queue-0000000004",         // no delay
		name(0x1800, "0000000005"), // not due, the next
		name(0x0800, "0000000000"),
		"foreign",
	}
	q := &WorkQueue{cfg: workQueueConfig{delays: true}}
	names, next := q.ready(kids, now)
	want := []string{"queue-0000000004", name(0x0800, "0000000000"), name(0x0800, "0000000003"), name(0x0900, "0000000001")}
	if !slices.Equal(names, want) {
		t.Errorf("ready = %q, want %q", names, want)
	}
	if !next.Equal(time.UnixMilli(0x1800)) {
		t.Errorf("next due = %v, want %v", next, time.UnixMilli(0x1800))
	}

	q.cfg.delays = false
	names, next = q.ready(kids, now)
	want = []string{
		name(0x0800, "0000000000"), name(0x0900, "0000000001"), name(0x2000, "0000000002"),
		name(0x0800, "0000000003"), "queue-0000000004", name(0x1800, "0000000005"),
	}
	if !slices.Equal(names, want) || !next.IsZero() {
		t.Errorf("without delay order: %q, %v; want every item in sequence order, delays ignored", names, next)
	}
}

// The expected names are Curator's DistributedIdQueue's: makeIdPath writes
// the item path, '|', the id and '|' (before the server's sequence
// number); parseId reads the id between the first '|' and the next, and
// sorts by the name with that part cut out. Worked out by hand from its
// source (5.4.0).
func TestWorkQueueNames_IDAsCuratorWritesAndReadsIt(t *testing.T) {
	if got := workItemPrefix + workItemID("job-42"); got != "queue-|job-42|" {
		t.Errorf("id job-42: %q", got)
	}
	for name, want := range map[string]string{
		"queue-|job-42|0000000007":      "job-42",
		"queue-|a b.c-ü|0000000000":     "a b.c-ü",
		"queue-|0000ABCD|0000000001":    "0000ABCD", // a delay item reads as its due time, as in Curator
		"queue-||0000000001":            "",
		"queue-|x|y|0000000001":         "x", // first and next '|' (no WorkQueue writes it)
		"queue-0000000001":              "",  // no id (Curator takes the whole name, and logs a bad node)
		"queue-|unterminated0000000001": "",
	} {
		if got, _ := workItemIDOf(name); got != want {
			t.Errorf("id of %q: %q, want %q", name, got, want)
		}
	}
	for name, want := range map[string]string{
		"queue-|job-42|0000000007":   "queue-0000000007",
		"queue-0000000007":           "queue-0000000007",
		"queue-1000000050000000001":  "queue-1000000050000000001",
		"queue-|0000ABCD|0000000003": "queue-0000000003",
		"queue-|x|y|0000000001":      "queue-y|0000000001",
		"queue-|open0000000001":      "queue-|open0000000001",
	} {
		if got := workItemOrderKey(name); got != want {
			t.Errorf("order key of %q: %q, want %q", name, got, want)
		}
	}
}

func TestWorkQueueNames_IDsLeaveTheSequenceOrderAlone(t *testing.T) {
	kids := []string{
		"queue-|zzz|0000000004",
		"queue-0000000002",
		"queue-|aaa|0000000003",
		"queue-|~|0000000000",
		"queue-0000000001",
		"foreign",
	}
	want := []string{"queue-|~|0000000000", "queue-0000000001", "queue-0000000002", "queue-|aaa|0000000003", "queue-|zzz|0000000004"}
	if got := workItemNames(kids); !slices.Equal(got, want) {
		t.Errorf("sorted %q, want %q", got, want)
	}
}

func TestWorkQueueNames_BadIDsAreRefusedWithWhatToDo(t *testing.T) {
	for _, id := range []string{"", "a/b", "/", "a|b", "|", "nul\x00", "tab\t", "del\x7f", "c1\u0085",
		"private\ue000", "noncharacter\ufff0", "emoji\U0001F600", "bad utf-8 \xff"} {
		id := unquote(t, id)
		err := checkWorkItemID(id)
		if !errors.Is(err, ErrInvalidItemID) || !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("id %q: %v, want ErrInvalidItemID", id, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), "zkrecipes: ") || strings.Count(err.Error(), "zkrecipes:") != 1 {
			t.Errorf("id %q: %q", id, err)
		}
		var c putConfig
		WithID(id)(&c)
		if !errors.Is(c.err, ErrInvalidItemID) {
			t.Errorf("WithID(%q): %v", id, c.err)
		}
	}
	for _, id := range []string{"job-42", "a b", ".", "..", "queue-", "ü", "日本", "\u00a0", strings.Repeat("x", 200)} {
		id := unquote(t, id)
		if err := checkWorkItemID(id); err != nil {
			t.Errorf("id %q refused: %v", id, err)
		}
	}
	var c putConfig
	WithID("job")(&c)
	WithPriority(3)(&c)
	if !errors.Is(c.err, ErrInvalidArgument) {
		t.Errorf("WithID and WithPriority: %v, want ErrInvalidArgument", c.err)
	}
}

// unquote reads s as a Go string literal's body.
func unquote(t *testing.T, s string) string {
	t.Helper()
	u, err := strconv.Unquote(`"` + s + `"`)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
