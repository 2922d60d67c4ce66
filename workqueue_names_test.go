package zkrecipes

import (
	"math"
	"slices"
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
	if len(names) != 6 || !next.IsZero() || names[0] != "queue-0000000004" {
		t.Errorf("without delay order: %q, %v; want every item by name", names, next)
	}
}
