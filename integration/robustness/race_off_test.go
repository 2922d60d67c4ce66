//go:build !race

package robustness_test

const raceEnabled = false
