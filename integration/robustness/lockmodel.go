package robustness

import (
	"fmt"
	"strings"

	"github.com/anishathalye/porcupine"
	"github.com/zkrecipes/zkrecipes/integration/chaos"
)

// LockOp is the input of an operation on a lock guarding a fenced
// resource.
type LockOp struct {
	Kind  string // "acquire", "end" (release or loss) or "write"
	Token int64  // the lease's token (for acquire: the token granted)
}

// The outputs of a lock write: what the fenced store answered, or unknown.
const (
	WriteAccepted = "accepted"
	WriteRefused  = "refused"
	WriteUnknown  = "unknown"
)

// lockState is the lock and its fenced resource: the token of the holder
// (0: free), the highest token granted, the highest token the resource
// accepted a write from.
type lockState struct {
	Holder, Granted, Written int64
}

// LockModel is a lock as seen by a fenced resource:
//   - acquire: granted only while nobody holds the lock, with a token above
//     every token granted before (grants in token order);
//   - end: the holding of that token ends (a release, or a loss, which the
//     history places between the acquisition's call and the moment its
//     holder was told: a lease can be lost before its holder logs it);
//   - write: the resource accepts a write with a token that has been
//     granted and is not below the highest token that wrote before, and
//     refuses it only when a higher token wrote.
//
// A history of a correct lock is linearizable against it: two holders
// overlap only after the first one's holding ended (by a release or a loss
// it was told of), and a stale holder's write is refused only because a
// newer token wrote.
var LockModel = porcupine.Model{
	Init: func() any { return lockState{} },
	Step: func(state, input, output any) (bool, any) {
		s := state.(lockState)
		in := input.(LockOp)
		switch in.Kind {
		case "acquire":
			if s.Holder != 0 || in.Token <= s.Granted {
				return false, s
			}
			s.Holder, s.Granted = in.Token, in.Token
			return true, s
		case "end":
			if s.Holder != in.Token {
				return false, s
			}
			s.Holder = 0
			return true, s
		case "write":
			allowed := in.Token <= s.Granted && in.Token >= s.Written
			switch output {
			case WriteAccepted:
				if !allowed {
					return false, s
				}
				s.Written = in.Token
				return true, s
			case WriteRefused:
				return in.Token < s.Written, s
			default: // unknown: applied if the resource would have taken it
				if allowed {
					s.Written = in.Token
				}
				return true, s
			}
		}
		return false, s
	},
	DescribeOperation: func(input, output any) string {
		in := input.(LockOp)
		if in.Kind == "write" {
			return fmt.Sprintf("write(%d) -> %v", in.Token, output)
		}
		return fmt.Sprintf("%s(%d)", in.Kind, in.Token)
	},
	DescribeState: func(state any) string {
		s := state.(lockState)
		return fmt.Sprintf("holder %d, granted %d, written %d", s.Holder, s.Granted, s.Written)
	},
}

// holding is one lease as the history shows it.
type holding struct {
	actor          string
	token          int64
	call, acquired int64 // the acquisition's CALL and ACQUIRED lines
	done           int64 // Done seen closed (0: never)
	lost           bool
	stop, released int64 // 0: never
	releaseOK      bool
}

// LockOperations turns the events of one lock workload (chaos kinds plus
// CALL lines) into porcupine operations. A failed acquisition is left out
// (it granted nothing the history can see); a write or a holding whose
// client was killed, or that never answered, is open-ended.
func LockOperations(events []chaos.Event) []porcupine.Operation {
	ids := clientIDs{}
	type pendingWrite struct {
		t     int64
		token int64
	}
	callAcq := map[string]int64{}
	writes := map[string]*pendingWrite{}
	holds := map[string]*holding{} // by actor + token
	var order []*holding
	var ops []porcupine.Operation
	key := func(a string, tok int64) string { return fmt.Sprintf("%s %d", a, tok) }
	for _, ev := range events {
		switch ev.Kind {
		case Call:
			f := strings.Fields(ev.Rest)
			if len(f) == 0 {
				continue
			}
			switch f[0] {
			case "acquire":
				callAcq[ev.Actor] = ev.T
			case "write":
				if len(f) > 1 {
					if tok, ok := atoi(f[1]); ok {
						writes[ev.Actor] = &pendingWrite{t: ev.T, token: tok}
					}
				}
			}
		case chaos.Acquired:
			call, ok := callAcq[ev.Actor]
			if !ok {
				call = ev.T
			}
			delete(callAcq, ev.Actor)
			ops = append(ops, porcupine.Operation{ClientId: ids.of(ev.Actor), Input: LockOp{"acquire", ev.Token}, Call: call, Return: ev.T})
			h := &holding{actor: ev.Actor, token: ev.Token, call: call, acquired: ev.T}
			holds[key(ev.Actor, ev.Token)] = h
			order = append(order, h)
		case chaos.Failed:
			delete(callAcq, ev.Actor)
		case chaos.Write:
			call := ev.T
			if w := writes[ev.Actor]; w != nil && w.token == ev.Token {
				call = w.t
			}
			delete(writes, ev.Actor)
			out := WriteUnknown
			switch {
			case strings.HasPrefix(ev.Rest, "accepted"):
				out = WriteAccepted
			case strings.HasPrefix(ev.Rest, "refused"):
				out = WriteRefused
			}
			ret := ev.T
			if out == WriteUnknown {
				ret = Unknown
			}
			ops = append(ops, porcupine.Operation{ClientId: ids.of(ev.Actor), Input: LockOp{"write", ev.Token}, Call: call, Output: out, Return: ret})
		case chaos.Done:
			if h := holds[key(ev.Actor, ev.Token)]; h != nil && h.done == 0 {
				h.done = ev.T
				h.lost = strings.HasPrefix(ev.Rest, "lost")
			}
		case chaos.Stop:
			if h := holds[key(ev.Actor, ev.Token)]; h != nil && h.stop == 0 {
				h.stop = ev.T
			}
		case chaos.Released:
			if h := holds[key(ev.Actor, ev.Token)]; h != nil && h.released == 0 {
				h.released = ev.T
				h.releaseOK = ev.Rest == "ok" || strings.Contains(ev.Rest, "not_yet_confirmed")
			}
		case chaos.Killed:
			if w := writes[ev.Actor]; w != nil {
				ops = append(ops, porcupine.Operation{ClientId: ids.of(ev.Actor), Input: LockOp{"write", w.token}, Call: w.t, Output: WriteUnknown, Return: Unknown})
				delete(writes, ev.Actor)
			}
		}
	}
	for a, w := range writes { // never answered
		ops = append(ops, porcupine.Operation{ClientId: ids.of(a), Input: LockOp{"write", w.token}, Call: w.t, Output: WriteUnknown, Return: Unknown})
	}
	for _, h := range order {
		op := porcupine.Operation{ClientId: ids.of(h.actor), Input: LockOp{"end", h.token}, Call: h.acquired, Return: Unknown}
		switch {
		case h.lost:
			// Lost at some point between the grant and the moment its
			// holder was told. The grant lies somewhere between the
			// acquisition's call and its ACQUIRED line, and so may the
			// loss: a holder paused before it logs its lease may find it
			// lost, after the next owner was granted and logged (the late
			// lease of chaos.Check).
			op.Call, op.Return = h.call, h.done
		case h.stop != 0 && h.released != 0 && h.releaseOK:
			op.Call, op.Return = h.stop, max(h.released, h.done)
		case h.stop != 0:
			op.Call = h.stop
		}
		ops = append(ops, op)
	}
	sortOps(ops)
	return ops
}
