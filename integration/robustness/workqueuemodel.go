package robustness

import (
	"fmt"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"
	"github.com/zkrecipes/zkrecipes/integration/chaos"
)

// The lines of the work queue workload (WorkQueue), one item a unique
// word; a take is a lock's acquisition, in the chaos kinds:
//
//	CALL <actor> put <item>         RET <actor> put ok | unknown <err>
//	CALL <actor> take               ACQUIRED <actor> <token> <item> <node> | ERROR <actor> <err>
//	DONE <actor> <token> lost|released <err>   the item's Done closed
//	STOP <actor> <token> <ack|release|lost|shutdown>
//	CALL <actor> ack|release <token>
//	RET <actor> ack|release ok|lost|fail|unknown <token> [err]
//
// An ack or release "lost" failed with ErrItemLost (nothing changed), "fail"
// with another error that says nothing changed, "unknown" with
// ErrOutcomeUnknown; one whose client was killed has no RET line.

// WorkQueueOp is the input of an operation on one work item.
type WorkQueueOp struct {
	Kind  string // "put", "take", "end" (the lock went: a loss, or the session's end), "ack", "release"
	Item  string
	Token int64 // the take's token (not for put)
}

// The outcomes of an ack or a release.
const (
	EndOK      = "ok"
	EndLost    = "lost"
	EndFail    = "fail"
	EndUnknown = "unknown"
)

// endMaybe is the output of the end of a take whose ack or release is of
// unknown outcome: if that applied, the lock went with it.
const endMaybe = "maybe"

// workState is one item: put, the token of the take holding its lock (0:
// none), the latest token granted, acked.
type workState struct {
	Put            bool
	Holder, Latest int64
	Acked          bool
}

// WorkQueueModel is a work queue as its consumers rely on it, item by item
// (porcupine partitions the history by item):
//   - take: granted only for an item put and not acked, while no other take
//     holds its lock, with a token above every earlier take's of the item;
//   - end: the lock of that take goes without an ack or release (a loss,
//     placed between the take's call and the moment its consumer was told,
//     or the end of its session);
//   - ack: succeeds only while the take is the item's latest and the item
//     not acked (also after the lock was lost, if nobody took it since); it
//     ends the item for good. ErrItemLost only when it could not succeed;
//   - release: as ack, but the item stays, for another take.
//
// Every item is then acked at most once, and taken again only after the
// earlier take's lock went (its end) or it was released.
var WorkQueueModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var items []string
		for _, op := range history {
			it := op.Input.(WorkQueueOp).Item
			if _, ok := by[it]; !ok {
				items = append(items, it)
			}
			by[it] = append(by[it], op)
		}
		out := make([][]porcupine.Operation, 0, len(items))
		for _, it := range items {
			out = append(out, by[it])
		}
		return out
	},
	Init: func() any { return workState{} },
	Step: func(state, input, output any) (bool, any) {
		s := state.(workState)
		in := input.(WorkQueueOp)
		latest := s.Put && !s.Acked && s.Latest == in.Token
		switch in.Kind {
		case "put":
			s.Put = true
			return true, s
		case "take":
			if !s.Put || s.Acked || s.Holder != 0 || in.Token <= s.Latest {
				return false, s
			}
			s.Holder, s.Latest = in.Token, in.Token
			return true, s
		case "end":
			if s.Holder != in.Token {
				return output == endMaybe, s
			}
			s.Holder = 0
			return true, s
		case "ack", "release":
			switch output {
			case EndOK:
				if !latest {
					return false, s
				}
			case EndLost:
				return !latest, s
			case EndFail:
				return true, s
			default: // unknown: applied only if it could be
				if !latest {
					return true, s
				}
			}
			if s.Holder == in.Token {
				s.Holder = 0
			}
			s.Acked = in.Kind == "ack"
			return true, s
		}
		return false, s
	},
	DescribeOperation: func(input, output any) string {
		in := input.(WorkQueueOp)
		switch in.Kind {
		case "put":
			return fmt.Sprintf("put(%s)", in.Item)
		case "ack", "release":
			return fmt.Sprintf("%s(%s, %d) -> %v", in.Kind, in.Item, in.Token, output)
		}
		return fmt.Sprintf("%s(%s, %d)", in.Kind, in.Item, in.Token)
	},
	DescribeState: func(state any) string {
		s := state.(workState)
		return fmt.Sprintf("put %v, holder %d, latest %d, acked %v", s.Put, s.Holder, s.Latest, s.Acked)
	},
}

// workTake is one take of an item as the history shows it.
type workTake struct {
	actor      string
	item       string
	token      int64
	call, at   int64 // the take's CALL and ACQUIRED lines
	done       int64 // Done seen closed (0: never)
	lost       bool
	stop       int64
	endedOK    bool // an ack or release returned ok
	endedMaybe bool // an ack or release of unknown outcome
}

// WorkQueueOperations turns the events of the work queue workload into
// porcupine operations for WorkQueueModel.
func WorkQueueOperations(events []chaos.Event) []porcupine.Operation {
	ids := clientIDs{}
	type call struct {
		t     int64
		op    string
		arg   string
		token int64
	}
	calls := map[string]call{} // actor -> its CALL in flight
	takes := map[int64]*workTake{}
	var order []*workTake
	var ops []porcupine.Operation
	open := func(actor string, c call) { // a call that never returned
		switch c.op {
		case "put":
			ops = append(ops, porcupine.Operation{ClientId: ids.of(actor), Input: WorkQueueOp{Kind: "put", Item: c.arg}, Call: c.t, Return: Unknown})
		case "ack", "release":
			if tk := takes[c.token]; tk != nil {
				tk.endedMaybe = true
				ops = append(ops, porcupine.Operation{ClientId: ids.of(actor), Input: WorkQueueOp{c.op, tk.item, c.token}, Call: c.t, Output: EndUnknown, Return: Unknown})
			}
		}
	}
	for _, ev := range events {
		f := strings.Fields(ev.Rest)
		switch ev.Kind {
		case Call:
			if len(f) == 0 {
				continue
			}
			c := call{t: ev.T, op: f[0]}
			if len(f) > 1 {
				c.arg = f[1]
				c.token, _ = atoi(f[1])
			}
			calls[ev.Actor] = c
		case Return:
			c, ok := calls[ev.Actor]
			if !ok || len(f) < 2 || f[0] != c.op {
				continue
			}
			delete(calls, ev.Actor)
			switch {
			case c.op == "put" && f[1] == "ok":
				ops = append(ops, porcupine.Operation{ClientId: ids.of(ev.Actor), Input: WorkQueueOp{Kind: "put", Item: c.arg}, Call: c.t, Return: ev.T})
			case c.op == "put":
				open(ev.Actor, c)
			case (c.op == "ack" || c.op == "release") && f[1] == EndUnknown:
				open(ev.Actor, c)
			case c.op == "ack" || c.op == "release":
				if tk := takes[c.token]; tk != nil {
					tk.endedOK = tk.endedOK || f[1] == EndOK
					ops = append(ops, porcupine.Operation{ClientId: ids.of(ev.Actor), Input: WorkQueueOp{c.op, tk.item, c.token}, Call: c.t, Output: f[1], Return: ev.T})
				}
			}
		case chaos.Acquired:
			c := calls[ev.Actor]
			delete(calls, ev.Actor)
			if c.op != "take" {
				c.t = ev.T
			}
			if len(f) == 0 {
				continue
			}
			tk := &workTake{actor: ev.Actor, item: f[0], token: ev.Token, call: c.t, at: ev.T}
			takes[ev.Token] = tk
			order = append(order, tk)
			ops = append(ops, porcupine.Operation{ClientId: ids.of(ev.Actor), Input: WorkQueueOp{"take", tk.item, tk.token}, Call: c.t, Return: ev.T})
		case chaos.Failed:
			delete(calls, ev.Actor)
		case chaos.Done:
			if tk := takes[ev.Token]; tk != nil && tk.done == 0 {
				tk.done = ev.T
				tk.lost = strings.HasPrefix(ev.Rest, "lost")
			}
		case chaos.Stop:
			if tk := takes[ev.Token]; tk != nil && tk.stop == 0 {
				tk.stop = ev.T
			}
		case chaos.Killed:
			if c, ok := calls[ev.Actor]; ok {
				open(ev.Actor, c)
				delete(calls, ev.Actor)
			}
		}
	}
	for a, c := range calls { // never answered
		open(a, c)
	}
	for _, tk := range order {
		op := porcupine.Operation{ClientId: ids.of(tk.actor), Input: WorkQueueOp{"end", tk.item, tk.token}, Call: tk.at, Return: Unknown}
		switch {
		case tk.lost:
			// Lost between the grant (after the take's call) and the
			// moment its consumer was told; an ack after that may still
			// succeed.
			op.Call, op.Return = tk.call, tk.done
		case tk.endedOK:
			continue // the ack or release deleted the lock
		case tk.endedMaybe:
			// The lock went with the ack or release, or later.
			op.Output = endMaybe
		case tk.stop != 0:
			op.Call = tk.stop
		}
		ops = append(ops, op)
	}
	sortOps(ops)
	return ops
}

// WorkQueueReport is what CheckWorkQueue found besides the model.
type WorkQueueReport struct {
	Put         int // puts that returned ok
	PutUnknown  int // puts of unknown outcome
	Takes       int // ACQUIRED lines
	Acked       int // acks that returned ok
	AckUnknown  int // acks of unknown outcome
	Released    int // releases that returned ok
	LostLocks   int // takes whose Done reported a loss
	Redelivered int // takes of an item taken before
	Drained     int // items taken by the test after the run
	// Explained counts the takes of an item while an earlier take's
	// consumer still worked on it, each after that consumer was told of
	// its loss; LateReports the takes logged after a later take of the same
	// item, explained by a loss they reported (see chaos.Check).
	Explained, LateReports int
	// Missing lists the items whose put returned ok that no ack (ok or of
	// unknown outcome) consumed and the test did not drain; Phantoms the
	// items taken or drained that nobody put; Overlaps the takes of an
	// item while an earlier consumer held it and had not been told of a
	// loss (chaos.Check's violations, item by item).
	Missing, Phantoms, Overlaps []string
	// LockedAfterClose lists the lock nodes owned by a session its client
	// closed, found right after the clients stopped; LockedAfterExpiry
	// those left once every session of a killed client had expired.
	LockedAfterClose, LockedAfterExpiry []string
}

// Violations lists what breaks the work queue's contract.
func (r WorkQueueReport) Violations() []string {
	var v []string
	for _, m := range r.Missing {
		v = append(v, "put, never consumed and not left: "+m)
	}
	for _, p := range r.Phantoms {
		v = append(v, "never put: "+p)
	}
	v = append(v, r.Overlaps...)
	for _, l := range r.LockedAfterClose {
		v = append(v, "lock left by a closed session: "+l)
	}
	for _, l := range r.LockedAfterExpiry {
		v = append(v, "lock left after its session ended: "+l)
	}
	return v
}

func (r WorkQueueReport) String() string {
	return fmt.Sprintf("%d put (+%d of unknown outcome), %d takes (%d of an item taken before; %d locks lost), %d acked (+%d unknown), %d released, %d drained after the run; "+
		"%d takes while an earlier consumer worked, each after its loss signal, %d late reports; %d missing, %d never put, %d overlaps, %d locks left at close, %d after expiry",
		r.Put, r.PutUnknown, r.Takes, r.Redelivered, r.LostLocks, r.Acked, r.AckUnknown, r.Released, r.Drained,
		r.Explained, r.LateReports, len(r.Missing), len(r.Phantoms), len(r.Overlaps), len(r.LockedAfterClose), len(r.LockedAfterExpiry))
}

// CheckWorkQueue checks what the model does not: every item put is
// consumed (acked, or left in the queue and drained by the test), and an
// item is taken while an earlier consumer holds it only after that
// consumer was told of its loss (chaos.Check on each item's takes).
// drained lists the items the test took after the run; the lock lists
// are the test's findings, copied into the report.
func CheckWorkQueue(events []chaos.Event, drained, lockedAfterClose, lockedAfterExpiry []string) WorkQueueReport {
	r := WorkQueueReport{Drained: len(drained), LockedAfterClose: lockedAfterClose, LockedAfterExpiry: lockedAfterExpiry}
	called := map[string]bool{}   // items whose put was called
	offered := map[string]bool{}  // items whose put returned ok
	consumed := map[string]bool{} // acked, ok or maybe
	itemOf := map[int64]string{}  // token -> item
	takes := map[string]int{}
	last := map[string]string{} // actor -> its call in flight ("put <item>", "ack <token>")
	byItem := map[string][]chaos.Event{}
	var killed []chaos.Event
	for _, ev := range events {
		f := strings.Fields(ev.Rest)
		switch ev.Kind {
		case Call:
			last[ev.Actor] = ev.Rest
			if len(f) >= 2 && f[0] == "put" {
				called[f[1]] = true
			}
		case Return:
			c := strings.Fields(last[ev.Actor])
			delete(last, ev.Actor)
			if len(f) < 2 || len(c) < 2 || c[0] != f[0] {
				continue
			}
			switch {
			case f[0] == "put" && f[1] == "ok":
				r.Put++
				offered[c[1]] = true
			case f[0] == "put":
				r.PutUnknown++
			case f[0] == "ack" && (f[1] == EndOK || f[1] == EndUnknown):
				tok, _ := atoi(c[1])
				consumed[itemOf[tok]] = true
				if f[1] == EndOK {
					r.Acked++
				} else {
					r.AckUnknown++
				}
			case f[0] == "release" && f[1] == EndOK:
				r.Released++
			}
		case chaos.Acquired:
			delete(last, ev.Actor)
			if len(f) == 0 {
				continue
			}
			r.Takes++
			it := f[0]
			itemOf[ev.Token] = it
			if takes[it]++; takes[it] > 1 {
				r.Redelivered++
			}
			byItem[it] = append(byItem[it], ev)
		case chaos.Failed:
			delete(last, ev.Actor)
		case chaos.Done, chaos.Stop:
			if ev.Kind == chaos.Done && strings.HasPrefix(ev.Rest, "lost") {
				r.LostLocks++
			}
			if it, ok := itemOf[ev.Token]; ok {
				byItem[it] = append(byItem[it], ev)
			}
		case chaos.Killed:
			killed = append(killed, ev)
			// An ack in flight when its client was killed may have consumed
			// the item.
			if c := strings.Fields(last[ev.Actor]); len(c) >= 2 && c[0] == "ack" {
				tok, _ := atoi(c[1])
				consumed[itemOf[tok]] = true
				r.AckUnknown++
			}
			delete(last, ev.Actor)
		}
	}
	for _, c := range last { // acks that never returned
		if f := strings.Fields(c); len(f) >= 2 && f[0] == "ack" {
			tok, _ := atoi(f[1])
			consumed[itemOf[tok]] = true
			r.AckUnknown++
		}
	}
	for _, it := range drained {
		consumed[it] = true
		if !called[it] {
			r.Phantoms = append(r.Phantoms, it)
		}
	}
	for it := range takes {
		if !called[it] {
			r.Phantoms = append(r.Phantoms, it)
		}
	}
	for it := range offered {
		if !consumed[it] {
			r.Missing = append(r.Missing, it)
		}
	}
	for it, evs := range byItem {
		if takes[it] < 2 {
			continue
		}
		// chaos.Check on the item's lines, with every KILLED line (they
		// end the intervals of the killed client's takes), in log order.
		evs = append(append([]chaos.Event(nil), evs...), killed...)
		sort.SliceStable(evs, func(i, j int) bool { return evs[i].Line < evs[j].Line })
		rep := chaos.Check(evs)
		r.Explained += rep.Explained
		r.LateReports += rep.LateReports
		for _, v := range rep.Violations {
			r.Overlaps = append(r.Overlaps, it+": "+v)
		}
	}
	sort.Strings(r.Missing)
	sort.Strings(r.Phantoms)
	sort.Strings(r.Overlaps)
	return r
}
