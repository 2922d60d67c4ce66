package robustness

import (
	"fmt"
	"sort"
	"strings"

	"github.com/zkrecipes/zkrecipes/integration/chaos"
)

// The lines of the queue workload, one item a unique word:
//
//	CALL <actor> offer <item>    RET <actor> offer ok | unknown <err>
//	CALL <actor> take            RET <actor> take ok <item> | uncertain <item> | fail <err>
//
// "uncertain" is a take that returned its item with ErrTakeUncertain: its
// delete may or may not be the one that removed the item.

// QueueReport is what CheckQueue found.
type QueueReport struct {
	Offered        int // offers that returned ok
	OfferedUnknown int // offers of unknown outcome
	Taken          int // takes that returned an item with a nil error
	TakenUncertain int // takes that returned an item with ErrTakeUncertain
	Remaining      int // items found in the queue after the run
	// InFlight counts the takes that never returned (their client was
	// killed): each may have removed an item nobody saw.
	InFlight int
	// Duplicates lists the items two takes returned with a nil error;
	// Phantoms the items taken or left that were never offered; Missing
	// the items whose offer returned ok that no take returned and that are
	// not left in the queue.
	Duplicates, Phantoms, Missing []string
}

// Violations lists what breaks the queue's contract: an item taken twice
// (both with a nil error), an item nobody offered, and more items missing
// than takes that never returned.
func (r QueueReport) Violations() []string {
	var v []string
	for _, d := range r.Duplicates {
		v = append(v, "taken twice: "+d)
	}
	for _, p := range r.Phantoms {
		v = append(v, "never offered: "+p)
	}
	if len(r.Missing) > r.InFlight {
		v = append(v, fmt.Sprintf("%d items lost (%d takes in flight when their client was killed): %s",
			len(r.Missing), r.InFlight, strings.Join(r.Missing, " ")))
	}
	return v
}

func (r QueueReport) String() string {
	return fmt.Sprintf("%d offered (+%d of unknown outcome), %d taken (+%d uncertain), %d left, %d takes in flight at a kill; %d taken twice, %d never offered, %d missing",
		r.Offered, r.OfferedUnknown, r.Taken, r.TakenUncertain, r.Remaining, r.InFlight, len(r.Duplicates), len(r.Phantoms), len(r.Missing))
}

// CheckQueue checks the events of a queue workload and the items left in
// the queue once every client stopped.
func CheckQueue(events []chaos.Event, remaining []string) QueueReport {
	var r QueueReport
	offered := map[string]bool{} // item -> offer returned ok
	maybe := map[string]bool{}   // offered with unknown outcome
	takes := map[string]int{}    // item -> takes with a nil error
	seen := map[string]bool{}    // returned by any take
	pending := map[string]bool{} // actor -> a take in flight
	for _, ev := range events {
		f := strings.Fields(ev.Rest)
		switch ev.Kind {
		case Call:
			if len(f) >= 2 && f[0] == "offer" {
				maybe[f[1]] = true
			}
			if len(f) >= 1 && f[0] == "take" {
				pending[ev.Actor] = true
			}
		case Return:
			if len(f) < 2 {
				continue
			}
			switch {
			case f[0] == "offer" && f[1] == "ok":
				r.Offered++
			case f[0] == "offer":
				r.OfferedUnknown++
			case f[0] == "take":
				delete(pending, ev.Actor)
				if len(f) < 3 {
					continue
				}
				switch f[1] {
				case "ok":
					r.Taken++
					takes[f[2]]++
					seen[f[2]] = true
				case "uncertain":
					r.TakenUncertain++
					seen[f[2]] = true
				}
			}
		case chaos.Killed:
			if pending[ev.Actor] {
				r.InFlight++
				delete(pending, ev.Actor)
			}
		}
	}
	// Offers that returned ok: the item is on the actor's CALL line.
	last := map[string]string{} // actor -> item of its offer in flight
	for _, ev := range events {
		f := strings.Fields(ev.Rest)
		switch {
		case ev.Kind == Call && len(f) >= 2 && f[0] == "offer":
			last[ev.Actor] = f[1]
		case ev.Kind == Return && len(f) >= 2 && f[0] == "offer" && f[1] == "ok":
			offered[last[ev.Actor]] = true
		}
	}
	r.InFlight += len(pending) // takes that never returned without a KILLED line
	r.Remaining = len(remaining)
	left := map[string]bool{}
	for _, it := range remaining {
		left[it] = true
		if !maybe[it] {
			r.Phantoms = append(r.Phantoms, it)
		}
	}
	for it, n := range takes {
		if n > 1 {
			r.Duplicates = append(r.Duplicates, it)
		}
	}
	for it := range seen {
		if !maybe[it] {
			r.Phantoms = append(r.Phantoms, it)
		}
	}
	for it := range offered {
		if !seen[it] && !left[it] {
			r.Missing = append(r.Missing, it)
		}
	}
	sort.Strings(r.Duplicates)
	sort.Strings(r.Phantoms)
	sort.Strings(r.Missing)
	return r
}
