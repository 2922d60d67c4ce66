package robustness

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/anishathalye/porcupine"
	"github.com/zkrecipes/zkrecipes/integration/chaos"
)

// The event kinds this package adds to the chaos suite's shared log (see
// chaos.Log). A line is "<mono-ns> <KIND> <actor> <fields...>"; an actor
// is "<process>/<workload>", for example "p3/mutex".
const (
	// Call: "<t> CALL <actor> <op> <args...>": an operation was invoked.
	// For the lock workloads op is "acquire" or "write <token>"; their
	// responses are the chaos kinds ACQUIRED, ERROR and WRITE.
	Call = "CALL"
	// Return: "<t> RET <actor> <op> <outcome> <values...>": the response to
	// the actor's last CALL, for the counter workloads. outcome is "ok",
	// "fail" (definitely not applied) or "unknown" (may or may not have
	// been applied); a read that failed is "fail".
	Return = "RET"
)

// Unknown is the response time of an operation that never returned
// (its client was killed, or its outcome is unknown): the checker may
// linearize it at any point after its call, or never.
const Unknown = math.MaxInt64

// Workload returns the workload part of an actor ("mutex" of "p3/mutex"),
// or "" when the actor names none.
func Workload(actor string) string {
	if i := strings.IndexByte(actor, '/'); i >= 0 {
		return actor[i+1:]
	}
	return ""
}

// ForWorkload returns the events of workload w: those of its actors, and
// FAULT and HEAL lines; a KILLED line of a process becomes one for its
// workload actor.
func ForWorkload(events []chaos.Event, w string) []chaos.Event {
	var out []chaos.Event
	for _, ev := range events {
		switch {
		case ev.Kind == chaos.Fault || ev.Kind == chaos.Heal:
			out = append(out, ev)
		case ev.Kind == chaos.Killed && Workload(ev.Actor) == "":
			ev.Actor += "/" + w
			out = append(out, ev)
		case Workload(ev.Actor) == w:
			out = append(out, ev)
		}
	}
	return out
}

// clientIDs numbers actors in order of first appearance (porcupine's
// ClientId, used by its visualization only).
type clientIDs map[string]int

func (c clientIDs) of(actor string) int {
	if id, ok := c[actor]; ok {
		return id
	}
	c[actor] = len(c)
	return c[actor]
}

// sortOps orders operations by call time (porcupine does not need it; it
// keeps reports and visualizations readable).
func sortOps(ops []porcupine.Operation) {
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
}

func atoi(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
