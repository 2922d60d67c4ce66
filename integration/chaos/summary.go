package chaos

// Summary is what a chaos client prints on stdout, as one line of JSON,
// when it stops.
type Summary struct {
	ID           string `json:"id"`
	Acquisitions int    `json:"acquisitions"` // leases acquired
	Losses       int    `json:"losses"`       // leases whose Release said they were lost
	Errors       int    `json:"errors"`       // acquisitions that failed
	Leaked       string `json:"leaked,omitempty"`
}

// Goroutines returns Leaked: goleak's report of the goroutines left after
// the client closed its Session, empty when none.
func (s Summary) Goroutines() string { return s.Leaked }
