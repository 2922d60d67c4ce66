package chaos

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Interval is the time in which one client believed it held the lock under
// one token: from its ACQUIRED line to its STOP line, or to the test's
// KILLED line for it.
type Interval struct {
	Client     string
	Token      int64
	Start, End int64 // End is math.MaxInt64 while open
	DoneT      int64 // when the client saw Done close (0 if never)
	DoneLost   bool  // Done closed because ownership was lost, not released
	Line       int   // line of the ACQUIRED event
}

// Report is what Check found in a shared log.
type Report struct {
	Acquisitions   int            // ACQUIRED lines
	ByClient       map[string]int // ACQUIRED lines per client
	Faults         map[string]int // FAULT lines per kind
	Errors         int            // failed acquisitions (ERROR lines)
	Losses         int            // DONE lines reporting a loss
	WritesAccepted int            // WRITE ... accepted
	WritesRefused  int            // WRITE ... refused (a stale token fenced off)
	// Explained counts the overlaps explained by a loss the old holder
	// had seen before the new holder acquired, and MaxExplained is the
	// longest of them.
	Explained    int
	MaxExplained time.Duration
	// LateReports counts the leases logged after a lease with a higher
	// token, explained by a loss they reported (see Check), and
	// MaxLateReport is the longest any of them was believed held, from its
	// ACQUIRED line to its DONE line.
	LateReports   int
	MaxLateReport time.Duration
	// Violations lists, in order, every overlap not explained either way
	// and every acquisition whose token is not above every one logged
	// before it, unless it is such a late lease.
	Violations []string
	// Recoveries holds, per HEAL line in order, the time until the next
	// ACQUIRED line; Unrecovered lists the HEAL lines with none after them.
	Recoveries  []Recovery
	Unrecovered []string
	// Open lists the intervals never closed (a client that crashed).
	Open []string
}

// Recovery is how long acquisitions took to resume after a fault healed.
type Recovery struct {
	Kind  string
	After time.Duration
}

// Check reconstructs holder intervals from events and checks them.
func Check(events []Event) Report {
	rep := Report{ByClient: map[string]int{}, Faults: map[string]int{}}
	type key struct {
		client string
		token  int64
	}
	ivs := map[key]*Interval{}
	var order []*Interval
	var acqs []Event
	for _, ev := range events {
		switch ev.Kind {
		case Acquired:
			rep.Acquisitions++
			rep.ByClient[ev.Actor]++
			iv := &Interval{Client: ev.Actor, Token: ev.Token, Start: ev.T, End: math.MaxInt64, Line: ev.Line}
			ivs[key{ev.Actor, ev.Token}] = iv
			order = append(order, iv)
			acqs = append(acqs, ev)
		case Done:
			if iv := ivs[key{ev.Actor, ev.Token}]; iv != nil && iv.DoneT == 0 {
				iv.DoneT = ev.T
				iv.DoneLost = strings.HasPrefix(ev.Rest, "lost")
				if iv.DoneLost {
					rep.Losses++
				}
			}
		case Stop:
			if iv := ivs[key{ev.Actor, ev.Token}]; iv != nil && iv.End == math.MaxInt64 {
				iv.End = ev.T
			}
		case Killed:
			for _, iv := range order {
				if iv.Client == ev.Actor && iv.End == math.MaxInt64 && iv.Start <= ev.T {
					iv.End = ev.T
				}
			}
		case Write:
			switch {
			case strings.HasPrefix(ev.Rest, "accepted"):
				rep.WritesAccepted++
			case strings.HasPrefix(ev.Rest, "refused"):
				rep.WritesRefused++
			}
		case Failed:
			rep.Errors++
		case Fault:
			rep.Faults[ev.Actor]++
		}
	}

	// Tokens: successive owners of one path hold strictly increasing
	// tokens, in grant order. A line is logged after its grant, though, and
	// a holder may pause in between (a busy machine): its session can
	// expire meanwhile, and the next owner be granted and log first, with
	// a higher token. That is no overlap on the server: the lower token
	// proves the late lease was granted first, and the next owner's grant
	// proves its node was gone by then. Such a lease can only report a
	// loss (DONE lost); one that reports a release, or none, was still
	// held when the higher token was granted. A late lease leaves the bar
	// where it was: the next one must still be above the highest token.
	sort.SliceStable(acqs, func(i, j int) bool { return acqs[i].T < acqs[j].T })
	late := map[*Interval]bool{}
	top := -1
	for i, a := range acqs {
		if top < 0 || a.Token > acqs[top].Token {
			top = i
			continue
		}
		if iv := ivs[key{a.Actor, a.Token}]; iv.DoneLost {
			late[iv] = true
			rep.LateReports++
			rep.MaxLateReport = max(rep.MaxLateReport, Duration(iv.Start, iv.DoneT))
			continue
		}
		rep.Violations = append(rep.Violations, fmt.Sprintf("line %d: %s acquired token %d after %s acquired %d (line %d)",
			a.Line, a.Actor, a.Token, acqs[top].Actor, acqs[top].Token, acqs[top].Line))
	}

	// Overlaps: B acquired while A still believed it held.
	sorted := append([]*Interval(nil), order...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Start != sorted[j].Start {
			return sorted[i].Start < sorted[j].Start
		}
		return sorted[i].Token < sorted[j].Token
	})
	for j, b := range sorted {
		for _, a := range sorted[:j] {
			if a.Client == b.Client || a.End <= b.Start {
				continue
			}
			if a.DoneLost && a.DoneT < b.Start {
				rep.Explained++
				rep.MaxExplained = max(rep.MaxExplained, Duration(b.Start, min(a.End, b.End)))
				continue
			}
			if late[b] && b.Token < a.Token {
				continue // b was granted before a and lost before a's grant: see above
			}
			why := "its lease's Done had not closed"
			if a.DoneT != 0 {
				why = fmt.Sprintf("its Done closed %v later", Duration(b.Start, a.DoneT))
				if !a.DoneLost {
					why = "its Done reported a release, not a loss"
				}
			}
			rep.Violations = append(rep.Violations, fmt.Sprintf("line %d: %s acquired token %d while %s (token %d, line %d) still held: %s",
				b.Line, b.Client, b.Token, a.Client, a.Token, a.Line, why))
		}
	}

	// Recovery after each heal.
	for _, ev := range events {
		if ev.Kind != Heal {
			continue
		}
		next := int64(-1)
		for _, a := range acqs {
			if a.T > ev.T {
				next = a.T
				break
			}
		}
		if next < 0 {
			rep.Unrecovered = append(rep.Unrecovered, fmt.Sprintf("line %d: %s", ev.Line, ev.Actor))
			continue
		}
		rep.Recoveries = append(rep.Recoveries, Recovery{Kind: ev.Actor, After: Duration(ev.T, next)})
	}
	for _, iv := range order {
		if iv.End == math.MaxInt64 {
			rep.Open = append(rep.Open, fmt.Sprintf("%s token %d (line %d)", iv.Client, iv.Token, iv.Line))
		}
	}
	return rep
}

// MaxRecovery returns the longest recovery, and of which fault kind.
func (r Report) MaxRecovery() Recovery {
	var m Recovery
	for _, rc := range r.Recoveries {
		if rc.After > m.After {
			m = rc
		}
	}
	return m
}

// CheckWriteOrder checks the writes a resource serialises itself, such as
// a ZooKeeper node written by a Multi of Lease.Check and SetOp: their
// WRITE lines read "accepted <seq>", seq the resource's own order of the
// write (the node's new Mzxid). Taken in that order, no accepted write may
// carry a token below one accepted before it: a former holder's write
// never lands after a later holder's. It returns the number of accepted
// writes it ordered, those accepted without a seq (a reply lost, the
// write found applied), and one line per write out of token order.
func CheckWriteOrder(events []Event) (ordered, unordered int, violations []string) {
	type write struct {
		seq int64
		ev  Event
	}
	var ws []write
	for _, ev := range events {
		f := strings.Fields(ev.Rest)
		if ev.Kind != Write || len(f) == 0 || f[0] != "accepted" {
			continue
		}
		var seq int64
		if len(f) < 2 {
			unordered++
			continue
		}
		if _, err := fmt.Sscan(f[1], &seq); err != nil {
			unordered++
			continue
		}
		ws = append(ws, write{seq, ev})
	}
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].seq < ws[j].seq })
	top := -1
	for i, w := range ws {
		if top >= 0 && w.ev.Token < ws[top].ev.Token {
			violations = append(violations, fmt.Sprintf("line %d: %s's write under token %d (seq %d) landed after %s's under token %d (seq %d, line %d)",
				w.ev.Line, w.ev.Actor, w.ev.Token, w.seq, ws[top].ev.Actor, ws[top].ev.Token, ws[top].seq, ws[top].ev.Line))
			continue
		}
		if top < 0 || w.ev.Token > ws[top].ev.Token {
			top = i
		}
	}
	return len(ws), unordered, violations
}
