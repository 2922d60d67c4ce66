//go:build race

package fleet

// raceEnabled reports whether the test binary has the race detector, so
// that the clients it builds have it too.
const raceEnabled = true
