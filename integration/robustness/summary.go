package robustness

// Summary is what a robustness client prints on stdout, as one line of
// JSON, when it stops.
type Summary struct {
	ID     string         `json:"id"`
	Ops    map[string]int `json:"ops"` // calls made, by workload
	Leaked string         `json:"leaked,omitempty"`
}

// Goroutines returns Leaked: goleak's report of the goroutines left after
// the client closed its Sessions, empty when none.
func (s Summary) Goroutines() string { return s.Leaked }
