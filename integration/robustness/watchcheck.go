package robustness

import (
	"fmt"
	"strings"

	"github.com/zkrecipes/zkrecipes/integration/chaos"
)

// Seen: "<t> SEEN <actor> <version> <count> <mzxid>": a WatchData
// callback of the watch workload saw the shared count's node at that data
// version, holding that count (the node missing is not logged).
const Seen = "SEEN"

// WatchReport is what CheckWatch found.
type WatchReport struct {
	Observers int // actors that saw anything
	Seen      int // SEEN lines
	// Violations lists every state seen out of order (a version or Mzxid not
	// above the one before), seen twice, or never written.
	Violations []string
}

func (r WatchReport) String() string {
	return fmt.Sprintf("%d observers, %d states seen, %d violations", r.Observers, r.Seen, len(r.Violations))
}

// CheckWatch checks the SEEN lines of every observer against the writes of
// the shared count workload (w names it): each observer's states must be a
// subsequence of the node's, in order: versions and Mzxids strictly
// increasing, each (version, count) one the node held. A version written by
// a set of unknown outcome may hold what that set wrote.
func CheckWatch(events []chaos.Event, w string) WatchReport {
	var r WatchReport
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
