// Package fleet is what the chaos and the robustness suites share: the
// client processes a test starts, the faults it injects into them and into
// their 3-server ensemble, and what every client process does the same way.
//
// The test side (linux only): [New] builds the suite's ./client and starts
// the ensemble and the shared log; a [Fleet] starts [Proc]s, each behind
// proxies of its own, injects faults on a seeded schedule
// ([Fleet.Inject]) and stops its processes ([StopAll]).
//
// The client side: [RegisterFlags] and [Require] for the flags every client
// takes, [Start] for a client process's life (watchdog, SIGTERM, goroutine
// baseline, shared log), [Connect] for a Session whose id and password the
// test can read ([SaveSession], [ReadSession]), [Hold] for the log of a
// lock lease, [Fence] for writes to a fencing store.
//
// Everything a client logs goes to the shared log ([chaos.Log]) in the
// format that [chaos.Parse] reads.
package fleet
