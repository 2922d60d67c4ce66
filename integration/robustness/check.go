package robustness

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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

// Keep writes, for study after a failure, the history ops of model into
// dir: <name>.history.txt, one operation a line in call order (call and
// return on the shared log's clock, "-" for a return never seen, the
// client, porcupine's description), and <name>.html, porcupine's
// visualization of it, checked again for at most timeout.
func Keep(dir, name string, model porcupine.Model, ops []porcupine.Operation, timeout time.Duration) error {
	var b strings.Builder
	sorted := slices.Clone(ops)
	sortOps(sorted)
	for _, op := range sorted {
		ret := "-"
		if op.Return != Unknown {
			ret = strconv.FormatInt(op.Return, 10)
		}
		desc := fmt.Sprint(op.Input, " -> ", op.Output)
		if model.DescribeOperation != nil {
			desc = model.DescribeOperation(op.Input, op.Output)
		}
		fmt.Fprintf(&b, "%d %s client%d %s\n", op.Call, ret, op.ClientId, desc)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".history.txt"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	_, info := porcupine.CheckOperationsVerbose(model, ops, timeout)
	f, err := os.Create(filepath.Join(dir, name+".html"))
	if err != nil {
		return err
	}
	return errors.Join(porcupine.Visualize(model, info, f), f.Close())
}
