// Package robustness checks zkrecipes the way etcd's tests/robustness
// checks etcd: client processes drive traffic at the recipes of a
// 3-server ensemble while the test injects faults from a printed seed, every
// operation is recorded with its invocation and response times on the
// machine's one monotonic clock, and each recipe's history is then checked
// against a sequential model with porcupine's linearizability checker
// (github.com/anishathalye/porcupine, a P-compositional search after Wing
// and Gong, with Lowe's memoization).
//
// Models (see the files named after them):
//   - lock (Mutex, SemaphoreMutex, RWMutex write side), as seen by a fenced
//     resource: grants in token order, one holder at a time, each holding
//     ending by a release or by a loss its holder was told of, and a write
//     accepted only if no newer token wrote; beside it the chaos suite's
//     overlap check (every overlap of two holders preceded by the old
//     holder's loss signal);
//   - counter (AtomicCounter): a linearizable 64-bit register with
//     add, get and compare-and-set;
//   - versioned count (SharedCount): a 32-bit count with its version,
//     get and versioned set.
//
// An operation whose outcome is unknown (the reply was lost, the client was
// killed) is recorded with an open response time, so the checker may place
// it anywhere after its invocation, or never.
//
// The fault run is skipped unless -robustness.duration is set:
//
//	cd integration && go test -race -count=1 ./robustness/ -run Robustness -robustness.duration=20s
//	go test ./robustness/ -run Robustness -robustness.duration=10m -robustness.seed=42
package robustness
