package robustness

import (
	"fmt"
	"os"
	"time"

	"github.com/anishathalye/porcupine"
)

// Result is one history's check.
type Result struct {
	Model      string
	Operations int           // operations checked
	Open       int           // of which of unknown outcome
	Verdict    string        // "ok", "illegal" or "unknown" (the checker timed out)
	Took       time.Duration // checker time
	// Visualization is the path of porcupine's HTML rendering of a history
	// that was not "ok", when one could be written.
	Visualization string
}

// OK reports whether the history was found linearizable.
func (r Result) OK() bool { return r.Verdict == string(porcupine.Ok) }

func (r Result) String() string {
	s := fmt.Sprintf("%s: %d operations (%d of unknown outcome), %s in %v", r.Model, r.Operations, r.Open, r.Verdict, r.Took.Round(time.Millisecond))
	if r.Visualization != "" {
		s += ", see " + r.Visualization
	}
	return s
}

// Check checks ops against model with porcupine for at most timeout. When
// the history is not found linearizable and dir is not empty, it writes
// porcupine's visualization of it there.
func Check(name string, model porcupine.Model, ops []porcupine.Operation, timeout time.Duration, dir string) Result {
	r := Result{Model: name, Operations: len(ops)}
	for _, op := range ops {
		if op.Return == Unknown || uncertain(op.Output) {
			r.Open++
		}
	}
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(model, ops, timeout)
	r.Took = time.Since(start)
	r.Verdict = string(res)
	if res != porcupine.Ok && dir != "" {
		if f, err := os.CreateTemp(dir, name+"-*.html"); err == nil {
			if porcupine.Visualize(model, info, f) == nil {
				r.Visualization = f.Name()
			}
			_ = f.Close()
		}
	}
	return r
}

// uncertain reports whether an output is that of an operation of unknown
// outcome.
func uncertain(out any) bool {
	switch out := out.(type) {
	case CounterResult:
		return out.Unknown
	case CountResult:
		return out.Unknown
	case string:
		return out == WriteUnknown
	}
	return false
}
