package robustness

import (
	"fmt"
	"strings"

	"github.com/anishathalye/porcupine"
	"github.com/zkrecipes/zkrecipes/integration/chaos"
)

// CounterOp is the input of an AtomicCounter operation.
type CounterOp struct {
	Kind     string // "get", "add" or "cas"
	Delta    int64  // add
	Expected int64  // cas
	New      int64  // cas
}

// CounterResult is the output of an AtomicCounter operation.
type CounterResult struct {
	Unknown   bool  // the outcome is unknown: applied or not
	Succeeded bool  // cas: the value was set
	Value     int64 // get: the value read; add, cas: the value before
}

// CounterModel is AtomicCounter's specification: one 64-bit register,
// initially 0. get returns it; add adds a delta and returns the value
// before; cas sets it only if it holds the expected value, and returns
// the value before. An operation of unknown outcome may or may not have
// happened (the model is nondeterministic).
var CounterModel = (&porcupine.NondeterministicModel{
	Init: func() []any { return []any{int64(0)} },
	Step: func(state, input, output any) []any {
		v := state.(int64)
		in := input.(CounterOp)
		out := output.(CounterResult)
		switch in.Kind {
		case "get":
			if out.Value == v {
				return []any{v}
			}
		case "add":
			if out.Unknown {
				return []any{v, v + in.Delta}
			}
			if out.Value == v {
				return []any{v + in.Delta}
			}
		case "cas":
			if out.Unknown {
				if v == in.Expected {
					return []any{v, in.New}
				}
				return []any{v}
			}
			if out.Value == v && out.Succeeded == (v == in.Expected) {
				if out.Succeeded {
					return []any{in.New}
				}
				return []any{v}
			}
		}
		return nil
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(CounterOp), output.(CounterResult)
		res := fmt.Sprint(out.Value)
		if out.Unknown {
			res = "?"
		}
		switch in.Kind {
		case "add":
			return fmt.Sprintf("add(%d) -> was %s", in.Delta, res)
		case "cas":
			return fmt.Sprintf("cas(%d, %d) -> %v, was %s", in.Expected, in.New, out.Succeeded, res)
		}
		return "get() -> " + res
	},
}).ToModel()

// CountOp is the input of a SharedCount operation.
type CountOp struct {
	Kind    string // "get" or "trySet"
	N       int32  // trySet: the new count
	Version int32  // trySet: the expected version
}

// CountResult is the output of a SharedCount operation.
type CountResult struct {
	Unknown bool  // the outcome is unknown
	OK      bool  // trySet: written (false: the version had changed)
	Count   int32 // get
	Version int32 // get: the version read; trySet: the new version
}

// countState is a shared count and its node's data version.
type countState struct {
	Count, Version int32
}

// SharedCountModel is SharedCount's specification: a 32-bit count with a
// version, initially 0 at version 0. get returns both; trySet writes the
// count only at the expected version and bumps the version, and fails,
// changing nothing, at any other version. A trySet of unknown outcome may or
// may not have happened.
var SharedCountModel = (&porcupine.NondeterministicModel{
	Init: func() []any { return []any{countState{}} },
	Step: func(state, input, output any) []any {
		s := state.(countState)
		in := input.(CountOp)
		out := output.(CountResult)
		switch in.Kind {
		case "get":
			if out.Count == s.Count && out.Version == s.Version {
				return []any{s}
			}
		case "trySet":
			match := s.Version == in.Version
			next := countState{Count: in.N, Version: s.Version + 1}
			switch {
			case out.Unknown && match:
				return []any{s, next}
			case out.Unknown:
				return []any{s}
			case out.OK && match && out.Version == next.Version:
				return []any{next}
			case !out.OK && !match:
				return []any{s}
			}
		}
		return nil
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(CountOp), output.(CountResult)
		if in.Kind == "get" {
			return fmt.Sprintf("get() -> %d@v%d", out.Count, out.Version)
		}
		res := fmt.Sprintf("%v@v%d", out.OK, out.Version)
		if out.Unknown {
			res = "?"
		}
		return fmt.Sprintf("trySet(%d@v%d) -> %s", in.N, in.Version, res)
	},
}).ToModel()

// The RET lines of the counter workloads:
//
//	CALL <actor> get                 RET <actor> get ok <value>
//	CALL <actor> add <delta>         RET <actor> add ok <pre>
//	CALL <actor> cas <exp> <new>     RET <actor> cas ok <true|false> <pre>
//	CALL <actor> cget                RET <actor> cget ok <count> <version>
//	CALL <actor> tryset <n> <ver>    RET <actor> tryset ok <true|false> <version>
//
// with "fail <err>" (not applied; a read that failed) or "unknown <err>"
// in place of "ok ...".

type call struct {
	t int64
	f []string
}

// CounterOperations turns the CALL and RET lines of an AtomicCounter or a
// SharedCount workload into porcupine operations (inputs CounterOp or
// CountOp). A failed operation is left out. A change of unknown outcome is
// marked Unknown and ends at the return of its client's next acknowledged
// change: ZooKeeper applies a client's updates in the order sent, and an
// expired session's never after its expiry, which comes before the next
// session exists (the checker may still place it just after that change,
// within its interval: a little weaker than ZooKeeper's order); without such
// a change, or when the client was killed before the operation returned,
// it is open-ended.
//
// Reads (and compare-and-sets whose compare failed) are widened to
// ZooKeeper's guarantee: a read is served by the
// server the session is connected to, which may lag the leader (reads are
// sequentially consistent, not linearizable; a client that wants the latest
// value must sync first), but never lags what the session has seen. So a
// read's invocation is moved back to the invocation of its client's
// previous operation, and to 0 for the first operation of a session (a new
// session may land on a server behind the old one). This is a little weaker
// than ZooKeeper's guarantee: the checker may place the read before its
// client's previous operation, so a read that misses only its client's
// latest write passes.
func CounterOperations(events []chaos.Event) []porcupine.Operation {
	ids := clientIDs{}
	pending := map[string]*call{}
	prev := map[string]int64{}     // the invocation of the actor's previous operation
	session := map[string]string{} // the actor's session id, from STATE lines
	var ops []porcupine.Operation
	open := map[string][]int{} // the actor's changes of unknown outcome, not yet bounded
	killed := false
	add := func(actor string, c *call, ret int64, res []string) {
		in, out, ok := counterOp(c.f, res)
		if !ok {
			return
		}
		call := c.t
		if isRead(in, out) {
			call = prev[actor] // 0 when the session changed since
		}
		prev[actor] = c.t
		if ret == Unknown {
			switch o := out.(type) {
			case CounterResult:
				o.Unknown = true
				out = o
			case CountResult:
				o.Unknown = true
				out = o
			}
		}
		ops = append(ops, porcupine.Operation{ClientId: ids.of(actor), Input: in, Call: call, Output: out, Return: ret})
		switch {
		case ret == Unknown && res == nil && !killed:
			open[actor] = append(open[actor], len(ops)-1)
		case ret != Unknown && isAckedChange(out):
			for _, i := range open[actor] {
				ops[i].Return = ret
			}
			delete(open, actor)
		}
	}
	for _, ev := range events {
		switch ev.Kind {
		case chaos.State:
			if f := strings.Fields(ev.Rest); len(f) == 2 && f[1] != "0x0" {
				if old, ok := session[ev.Actor]; ok && old != f[1] {
					delete(prev, ev.Actor)
				}
				session[ev.Actor] = f[1]
			}
		case Call:
			pending[ev.Actor] = &call{t: ev.T, f: strings.Fields(ev.Rest)}
		case Return:
			c := pending[ev.Actor]
			delete(pending, ev.Actor)
			f := strings.Fields(ev.Rest)
			if c == nil || len(f) < 2 || len(c.f) == 0 || f[0] != c.f[0] {
				continue
			}
			switch f[1] {
			case "ok":
				add(ev.Actor, c, ev.T, f[2:])
			case "unknown":
				add(ev.Actor, c, Unknown, nil)
			}
		case chaos.Killed:
			if c := pending[ev.Actor]; c != nil {
				killed = true
				add(ev.Actor, c, Unknown, nil)
				killed = false
				delete(pending, ev.Actor)
			}
		}
	}
	killed = true
	for a, c := range pending {
		add(a, c, Unknown, nil)
	}
	sortOps(ops)
	return ops
}

// isAckedChange reports whether an operation's output acknowledges a
// change it made.
func isAckedChange(out any) bool {
	switch out := out.(type) {
	case CounterResult:
		return !out.Unknown && out.Succeeded
	case CountResult:
		return !out.Unknown && out.OK
	}
	return false
}

// isRead reports whether an operation only read: a get, or a
// compare-and-set whose compare failed (it read the value, possibly from a
// lagging server, and wrote nothing).
func isRead(in, out any) bool {
	switch in := in.(type) {
	case CounterOp:
		r, _ := out.(CounterResult)
		return in.Kind == "get" || (in.Kind == "cas" && !r.Unknown && !r.Succeeded)
	case CountOp:
		return in.Kind == "get"
	}
	return false
}

// counterOp parses a CALL's fields and a RET's values (nil: unknown). It
// reports false for an operation that cannot be used: a read of unknown
// outcome (it changed nothing), or a malformed line.
func counterOp(c, res []string) (any, any, bool) {
	num := func(i int, f []string) int64 {
		if i >= len(f) {
			return 0
		}
		n, _ := atoi(f[i])
		return n
	}
	known := res != nil
	switch c[0] {
	case "get":
		return CounterOp{Kind: "get"}, CounterResult{Value: num(0, res)}, known
	case "add":
		return CounterOp{Kind: "add", Delta: num(1, c)}, CounterResult{Succeeded: known, Value: num(0, res)}, len(c) == 2
	case "cas":
		return CounterOp{Kind: "cas", Expected: num(1, c), New: num(2, c)},
			CounterResult{Succeeded: len(res) > 0 && res[0] == "true", Value: num(1, res)}, len(c) == 3
	case "cget":
		return CountOp{Kind: "get"}, CountResult{Count: int32(num(0, res)), Version: int32(num(1, res))}, known
	case "tryset":
		return CountOp{Kind: "trySet", N: int32(num(1, c)), Version: int32(num(2, c))},
			CountResult{OK: len(res) > 0 && res[0] == "true", Version: int32(num(1, res))}, len(c) == 3
	}
	return nil, nil, false
}
