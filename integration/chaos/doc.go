// Package chaos is the zkrecipes chaos suite: several client OS processes
// (the program in ./client) contend for one zkrecipes Mutex on a 3-node
// local ensemble and write to a fencing store, while the test injects
// faults at random from a printed seed — leader SIGKILL and restart,
// follower SIGSTOP/SIGCONT, forced expiry of the holder's session, proxy
// blackholes shorter and longer than the session timeout, SIGKILL of a
// client process, and lost replies (requests reach the server, the replies
// are lost and the connection resets, sometimes on the reconnection too).
//
// Every client appends one line per event to a shared O_APPEND log, stamped
// with CLOCK_MONOTONIC (one clock for every process of the machine). Check
// reconstructs from it the interval in which each process believed it held
// the lock and requires every overlap of two such intervals to be explained
// by a loss the old holder had been told of (its lease's Done closed) before
// the new holder acquired.
//
// Run it with
//
//	cd integration && go test -race -count=1 ./chaos/ -run Chaos -v
//	go test ./chaos/ -run Chaos -chaos.duration=10m -chaos.seed=42
package chaos
