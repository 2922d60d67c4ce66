package robustness

import (
	"fmt"
	"strings"

	"github.com/zkrecipes/zkrecipes/integration/chaos"
)

// The watch workload's lines.
const (
	// Seen: "<t> SEEN <actor> <version> <count> <mzxid>": an observer of
	// the watch workload (WatchData, NodeCache or TreeCache; see
	// ObserverActor) saw the shared count's node at that data version,
	// holding that count (the node missing is not logged).
	Seen = "SEEN"
	// Listed: "<t> LISTED <actor> <pzxid> <numChildren> <names> <hash>": a
	// WatchChildren observer saw the queue's node with that Pzxid and
	// NumChildren in its Stat, and a listing of that many names with that
	// ListingHash (the node missing is not logged).
	Listed = "LISTED"
)

// WatchReport is what CheckWatch found.
type WatchReport struct {
	Observers int            // actors that saw anything
	Seen      int            // SEEN lines
	ByRecipe  map[string]int // SEEN lines by the observer's recipe
	// Violations lists every state seen out of order (a version or Mzxid not
	// above the one before), seen twice, or never written.
	Violations []string
}

func (r WatchReport) String() string {
	var by []string
	for _, rc := range DataRecipes {
		by = append(by, fmt.Sprintf("%s %d", rc, r.ByRecipe[rc]))
	}
	return fmt.Sprintf("%d observers, %d states seen (%s), %d violations", r.Observers, r.Seen, strings.Join(by, ", "), len(r.Violations))
}

// CheckWatch checks the SEEN lines of every observer against the writes of
// the shared count workload (w names it): each observer's states must be a
// subsequence of the node's, in order: versions and Mzxids strictly
// increasing, each (version, count) one the node held. A version written by
// a set of unknown outcome, or by one that never returned (its client was
// killed), may hold what that set wrote.
func CheckWatch(events []chaos.Event, w string) WatchReport {
	r := WatchReport{ByRecipe: map[string]int{}}
	written := map[int32]map[int32]bool{0: {0: true}} // version -> counts it may hold
	pending := map[string][]string{}
	type last struct{ version, mzxid int64 }
	seen := map[string]*last{}
	for _, ev := range events {
		f := strings.Fields(ev.Rest)
		switch {
		case ev.Kind == Call && Workload(ev.Actor) == w:
			pending[ev.Actor] = f
		case ev.Kind == Return && Workload(ev.Actor) == w && len(f) >= 2 && f[0] == "tryset":
			c := pending[ev.Actor]
			delete(pending, ev.Actor)
			if len(c) != 3 || c[0] != "tryset" {
				continue
			}
			n, _ := atoi(c[1])
			exp, _ := atoi(c[2])
			v := int32(exp) + 1
			if f[1] == "ok" && len(f) >= 4 && f[2] == "true" {
				got, _ := atoi(f[3])
				v = int32(got)
			} else if f[1] != "unknown" {
				continue
			}
			if written[v] == nil {
				written[v] = map[int32]bool{}
			}
			written[v][int32(n)] = true
		}
	}
	// A set still pending at the end never returned: its client was killed
	// (or stopped) with it in flight, so it may have been written.
	for _, c := range pending {
		if len(c) == 3 && c[0] == "tryset" {
			n, _ := atoi(c[1])
			exp, _ := atoi(c[2])
			v := int32(exp) + 1
			if written[v] == nil {
				written[v] = map[int32]bool{}
			}
			written[v][int32(n)] = true
		}
	}
	for _, ev := range events {
		if ev.Kind != Seen {
			continue
		}
		f := strings.Fields(ev.Rest)
		if len(f) != 3 {
			r.Violations = append(r.Violations, fmt.Sprintf("line %d: malformed: %q", ev.Line, ev.Rest))
			continue
		}
		v, _ := atoi(f[0])
		n, _ := atoi(f[1])
		z, _ := atoi(f[2])
		r.Seen++
		r.ByRecipe[Recipe(ev.Actor)]++
		l := seen[ev.Actor]
		if l == nil {
			r.Observers++
			l = &last{version: -1, mzxid: -1}
			seen[ev.Actor] = l
		}
		if v <= l.version || z <= l.mzxid {
			r.Violations = append(r.Violations, fmt.Sprintf("line %d: %s saw version %d (mzxid %d) after version %d (mzxid %d)", ev.Line, ev.Actor, v, z, l.version, l.mzxid))
		}
		if !written[int32(v)][int32(n)] {
			r.Violations = append(r.Violations, fmt.Sprintf("line %d: %s saw count %d at version %d, never written there", ev.Line, ev.Actor, n, v))
		}
		l.version, l.mzxid = v, z
	}
	return r
}

// ChildrenReport is what CheckChildren found.
type ChildrenReport struct {
	Observers int // actors that listed anything
	Listed    int // LISTED lines
	Listings  int // distinct listings (Pzxids) seen
	// Violations lists every listing seen out of Pzxid order or twice,
	// whose names do not match its Stat's NumChildren, or that differs
	// from another observer's listing at the same Pzxid.
	Violations []string
}

func (r ChildrenReport) String() string {
	return fmt.Sprintf("%d observers, %d listings seen (%d distinct), %d violations", r.Observers, r.Listed, r.Listings, len(r.Violations))
}

// CheckChildren checks the LISTED lines of every observer: each
// observer's listings must be a subsequence of the node's, in order:
// Pzxids strictly increasing, as many names as the Stat's NumChildren
// (ZooKeeper reads both at once), and the same names as every other
// observer saw at that Pzxid (a Pzxid is the zxid of the change that made
// the listing, so it names one listing).
func CheckChildren(events []chaos.Event) ChildrenReport {
	var r ChildrenReport
	last := map[string]int64{}
	byPzxid := map[int64]string{}
	for _, ev := range events {
		if ev.Kind != Listed {
			continue
		}
		f := strings.Fields(ev.Rest)
		if len(f) != 4 {
			r.Violations = append(r.Violations, fmt.Sprintf("line %d: malformed: %q", ev.Line, ev.Rest))
			continue
		}
		z, _ := atoi(f[0])
		r.Listed++
		l, ok := last[ev.Actor]
		if !ok {
			r.Observers++
			l = -1
		}
		if z <= l {
			r.Violations = append(r.Violations, fmt.Sprintf("line %d: %s listed pzxid %d after pzxid %d", ev.Line, ev.Actor, z, l))
		}
		last[ev.Actor] = z
		if f[1] != f[2] {
			r.Violations = append(r.Violations, fmt.Sprintf("line %d: %s listed %s names under a stat of %s children (pzxid %d)", ev.Line, ev.Actor, f[2], f[1], z))
		}
		listing := f[2] + " " + f[3]
		if prev, ok := byPzxid[z]; !ok {
			byPzxid[z] = listing
			r.Listings++
		} else if prev != listing {
			r.Violations = append(r.Violations, fmt.Sprintf("line %d: %s listed %s at pzxid %d, another observer %s", ev.Line, ev.Actor, listing, z, prev))
		}
	}
	return r
}
