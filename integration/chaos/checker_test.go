package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func parse(t *testing.T, log string) []Event {
	t.Helper()
	evs, err := Parse(strings.NewReader(log))
	require.NoError(t, err)
	return evs
}

func TestCheckExplainsOnlyOverlapsAfterASeenLoss(t *testing.T) {
	cases := []struct {
		name       string
		log        string
		violations int
		explained  int
	}{
		{"clean handoff", `
100 ACQUIRED a 10
150 STOP a 10 release
160 DONE a 10 released zkrecipes: lease released
170 RELEASED a 10 ok
200 ACQUIRED b 20
250 STOP b 20 release`, 0, 0},
		{"loss seen before the next holder acquired", `
100 ACQUIRED a 10
150 DONE a 10 lost zkrecipes: ownership lost: suspended
300 ACQUIRED b 20
310 STOP a 10 lost
400 STOP b 20 release`, 0, 1},
		{"loss seen only after the next holder acquired", `
100 ACQUIRED a 10
300 ACQUIRED b 20
310 DONE a 10 lost zkrecipes: ownership lost: suspended
320 STOP a 10 lost
400 STOP b 20 release`, 1, 0},
		{"never told", `
100 ACQUIRED a 10
300 ACQUIRED b 20
400 STOP b 20 release
500 STOP a 10 release`, 1, 0},
		{"killed holder ends its interval", `
100 ACQUIRED a 10
150 KILLED a
300 ACQUIRED b 20
400 STOP b 20 release`, 0, 0},
		{"token not above the previous holder's", `
100 ACQUIRED a 20
150 STOP a 20 release
300 ACQUIRED b 10
400 STOP b 10 release`, 1, 0},
		{"a lease logged after its successor's, lost before it was logged", `
100 ACQUIRED b 20
110 ACQUIRED a 10
115 DONE a 10 lost zkrecipes: ownership lost: suspended
120 STOP a 10 lost
200 STOP b 20 release`, 0, 0},
		{"a lower token logged after a higher one, then released", `
100 ACQUIRED b 20
110 ACQUIRED a 10
200 STOP a 10 release
210 DONE a 10 released zkrecipes: lease released
300 STOP b 20 release`, 2, 0},
		{"a lease logged late does not lower the bar for the next one", `
100 ACQUIRED b 20
110 ACQUIRED a 10
115 DONE a 10 lost zkrecipes: ownership lost: suspended
120 STOP a 10 lost
200 STOP b 20 release
300 ACQUIRED c 15
400 STOP c 15 release`, 1, 0},
		{"a client's own successive leases never overlap", `
100 ACQUIRED a 10
150 STOP a 10 release
300 ACQUIRED a 20
400 STOP a 20 release`, 0, 0},
	}
	// late counts, per case, the leases logged after a higher token that
	// the check excuses by their reported loss (0 for the others).
	late := map[string]int{
		"a lease logged after its successor's, lost before it was logged": 1,
		"a lease logged late does not lower the bar for the next one":     1,
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := Check(parse(t, c.log))
			assert.Len(t, rep.Violations, c.violations, "%q", rep.Violations)
			assert.Equal(t, c.explained, rep.Explained)
			assert.Equal(t, late[c.name], rep.LateReports, "late reports")
		})
	}
}

func TestCheckCountsFaultsWritesAndRecovery(t *testing.T) {
	rep := Check(parse(t, `
100 ACQUIRED a 10
110 WRITE a 10 accepted
120 WRITE a 10 refused
130 STOP a 10 fenced
200 FAULT leader-kill server 1
1000200 HEAL leader-kill
3000200 ACQUIRED b 20
3000300 ERROR c zkrecipes: something
4000000 FAULT blackhole-long c 6s
4000100 HEAL blackhole-long`))
	assert.Equal(t, 2, rep.Acquisitions)
	assert.Equal(t, map[string]int{"leader-kill": 1, "blackhole-long": 1}, rep.Faults)
	assert.Equal(t, 1, rep.WritesAccepted)
	assert.Equal(t, 1, rep.WritesRefused)
	assert.Equal(t, 1, rep.Errors)
	require.Len(t, rep.Recoveries, 1)
	assert.Equal(t, Recovery{Kind: "leader-kill", After: 2 * time.Millisecond}, rep.Recoveries[0])
	assert.Len(t, rep.Unrecovered, 1, "no acquisition after the last heal")
	assert.Equal(t, []string{"b token 20 (line 8)"}, rep.Open)
}

func TestParseRejectsMalformedLines(t *testing.T) {
	for _, l := range []string{"x ACQUIRED a 1", "1 ACQUIRED a", "1 ACQUIRED a x", "1 DONE"} {
		_, err := Parse(strings.NewReader(l))
		assert.Error(t, err, l)
	}
}

func TestStoreRefusesLowerTokensAndAcceptsEqualOnes(t *testing.T) {
	s := &Store{}
	for _, c := range []struct {
		tok int64
		ok  bool
	}{{5, true}, {5, true}, {7, true}, {6, false}, {7, true}, {9, true}, {1, false}} {
		assert.Equal(t, c.ok, s.Offer(c.tok), c.tok)
	}
	assert.Equal(t, StoreStats{Accepted: 5, Refused: 2}, s.Stats())
}

func TestCheckWriteOrderTakesTheResourcesOrderNotTheLogs(t *testing.T) {
	ordered, unordered, v := CheckWriteOrder(parse(t, `
100 WRITE a 10 accepted 1001
110 WRITE b 20 accepted 1003
105 WRITE a 10 accepted 1002
120 WRITE a 10 refused
130 WRITE b 20 accepted
140 WRITE b 20 error zkrecipes: connection lost`))
	assert.Equal(t, 3, ordered)
	assert.Equal(t, 1, unordered)
	assert.Empty(t, v, "logged out of order, applied in token order")

	_, _, v = CheckWriteOrder(parse(t, `
100 WRITE a 10 accepted 1001
110 WRITE b 20 accepted 1002
120 WRITE a 10 accepted 1003
130 WRITE b 20 accepted 1004`))
	require.Len(t, v, 1, "a former holder's write applied after a later holder's")
	assert.Contains(t, v[0], "line 4: a's write under token 10 (seq 1003) landed after b's under token 20")
}
