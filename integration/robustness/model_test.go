package robustness_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/integration/chaos"
	"github.com/zkrecipes/zkrecipes/integration/robustness"
)

func parse(t *testing.T, log string) []chaos.Event {
	t.Helper()
	evs, err := chaos.Parse(strings.NewReader(log))
	require.NoError(t, err)
	return evs
}

func verdict(model porcupine.Model, ops []porcupine.Operation) string {
	return robustness.Check("t", model, ops, 10*time.Second, "").Verdict
}

// history is a hand-written log and whether model must accept it.
type history struct {
	name, log string
	ok        bool
}

// judge checks each history's operations of workload against model.
func judge(t *testing.T, histories []history, workload string, model porcupine.Model, operations func([]chaos.Event) []porcupine.Operation) {
	for _, c := range histories {
		t.Run(c.name, func(t *testing.T) {
			ops := operations(robustness.ForWorkload(parse(t, c.log), workload))
			want := porcupine.Illegal
			if c.ok {
				want = porcupine.Ok
			}
			assert.Equal(t, string(want), verdict(model, ops))
		})
	}
}

func TestLockModelJudgesLeaseHistories(t *testing.T) {
	judge(t, []history{
		{"one holder after another", `
10 CALL a/m acquire
20 ACQUIRED a/m 5
21 CALL a/m write 5
22 WRITE a/m 5 accepted
30 STOP a/m 5 release
35 DONE a/m 5 released
40 RELEASED a/m 5 ok
15 CALL b/m acquire
50 ACQUIRED b/m 7
51 CALL b/m write 7
52 WRITE b/m 7 accepted`, true},
		{"a second holder before the first released", `
10 CALL a/m acquire
20 ACQUIRED a/m 5
15 CALL b/m acquire
30 ACQUIRED b/m 7
40 STOP a/m 5 release
45 RELEASED a/m 5 ok
46 DONE a/m 5 released`, false},
		{"a second holder after the first was told of its loss", `
10 CALL a/m acquire
20 ACQUIRED a/m 5
25 DONE a/m 5 lost zkrecipes: ownership lost: suspended
15 CALL b/m acquire
30 ACQUIRED b/m 7
31 CALL a/m write 5
32 WRITE a/m 5 accepted
33 CALL b/m write 7
34 WRITE b/m 7 accepted
35 STOP a/m 5 lost`, true},
		{"a stale token accepted after a newer one wrote", `
10 CALL a/m acquire
20 ACQUIRED a/m 5
25 DONE a/m 5 lost zkrecipes: ownership lost: suspended
15 CALL b/m acquire
30 ACQUIRED b/m 7
33 CALL b/m write 7
34 WRITE b/m 7 accepted
35 CALL a/m write 5
36 WRITE a/m 5 accepted`, false},
		{"tokens granted out of order", `
10 CALL a/m acquire
20 ACQUIRED a/m 9
21 STOP a/m 9 release
22 RELEASED a/m 9 ok
23 DONE a/m 9 released
30 CALL b/m acquire
40 ACQUIRED b/m 7`, false},
		{"a lease logged after its successor's, lost before it was logged", `
10 CALL a/m acquire
15 CALL b/m acquire
20 ACQUIRED b/m 7
21 CALL b/m write 7
22 WRITE b/m 7 accepted
30 ACQUIRED a/m 5
31 DONE a/m 5 lost zkrecipes: ownership lost: suspended
32 STOP a/m 5 lost
33 RELEASED a/m 5 zkrecipes:_ownership_lost
40 STOP b/m 7 release
45 DONE b/m 7 released
46 RELEASED b/m 7 ok`, true},
		{"a lease logged after its successor's and released, not lost", `
10 CALL a/m acquire
15 CALL b/m acquire
20 ACQUIRED b/m 7
30 ACQUIRED a/m 5
32 STOP a/m 5 release
33 DONE a/m 5 released
34 RELEASED a/m 5 ok
40 STOP b/m 7 release
45 DONE b/m 7 released
46 RELEASED b/m 7 ok`, false},
		{"a lease logged late whose acquisition began after its successor's grant", `
15 CALL b/m acquire
20 ACQUIRED b/m 7
25 CALL a/m acquire
30 ACQUIRED a/m 5
31 DONE a/m 5 lost zkrecipes: ownership lost: suspended
32 STOP a/m 5 lost`, false},
		{"a lease logged late writes after its successor wrote", `
10 CALL a/m acquire
15 CALL b/m acquire
20 ACQUIRED b/m 7
21 CALL b/m write 7
22 WRITE b/m 7 accepted
30 ACQUIRED a/m 5
31 CALL a/m write 5
32 WRITE a/m 5 accepted
35 DONE a/m 5 lost zkrecipes: ownership lost: suspended`, false},
		{"a killed holder's lease ends unseen", `
10 CALL a/m acquire
20 ACQUIRED a/m 5
21 CALL a/m write 5
25 KILLED a
15 CALL b/m acquire
30 ACQUIRED b/m 7
31 CALL b/m write 7
32 WRITE b/m 7 accepted`, true},
	}, "m", robustness.LockModel, robustness.LockOperations)
}

func TestCounterModelJudgesHistories(t *testing.T) {
	judge(t, []history{
		{"adds and a read", `
10 CALL a/c add 2
20 RET a/c add ok 0
30 CALL b/c add 3
40 RET b/c add ok 2
50 CALL a/c get
60 RET a/c get ok 5`, true},
		{"a lost update", `
10 CALL a/c add 2
20 RET a/c add ok 0
30 CALL b/c add 3
40 RET b/c add ok 0`, false},
		{"an add of unknown outcome that happened", `
10 CALL a/c add 2
20 RET a/c add unknown zk: connection closed
30 CALL b/c add 3
40 RET b/c add ok 2`, true},
		{"an add of unknown outcome that never happened", `
10 CALL a/c add 2
20 RET a/c add unknown zk: connection closed
30 CALL b/c add 3
40 RET b/c add ok 0`, true},
		{"an add of unknown outcome applied after its client's next acknowledged add returned", `
10 CALL a/c add 2
20 RET a/c add unknown zk: connection closed
30 CALL a/c add 3
40 RET a/c add ok 0
50 CALL b/c add 1
60 RET b/c add ok 3
70 CALL b/c add 1
80 RET b/c add ok 6`, false},
		{"an add of unknown outcome whose client was killed applied late", `
10 CALL a/c add 2
20 KILLED a
50 CALL b/c add 1
60 RET b/c add ok 2`, true},
		{"a failed add that happened after all", `
10 CALL a/c add 2
20 RET a/c add fail retries exhausted
30 CALL b/c add 3
40 RET b/c add ok 2`, false},
		{"a compare-and-set that lost the race", `
10 CALL a/c cas 0 4
20 RET a/c cas ok true 0
30 CALL b/c cas 0 9
40 RET b/c cas ok false 4`, true},
		{"two compare-and-sets from one value", `
10 CALL a/c cas 0 4
20 RET a/c cas ok true 0
30 CALL b/c cas 0 9
40 RET b/c cas ok true 0`, false},
		{"a read older than what its client saw before its last call", `
10 CALL a/c add 2
20 RET a/c add ok 0
30 CALL a/c add 3
40 RET a/c add ok 2
50 CALL a/c get
60 RET a/c get ok 0`, false},
		{"a follower's read behind another client's write", `
10 CALL a/c add 2
20 RET a/c add ok 0
25 CALL b/c add 1
26 RET b/c add ok 2
30 CALL a/c get
40 RET a/c get ok 2`, true},
		{"a failed compare-and-set that read a lagging server", `
10 CALL a/c add 2
20 RET a/c add ok 0
25 CALL b/c add 1
26 RET b/c add ok 2
30 CALL a/c cas 3 7
40 RET a/c cas ok false 2`, true},
	}, "c", robustness.CounterModel, robustness.CounterOperations)
}

func TestSharedCountModelJudgesHistories(t *testing.T) {
	judge(t, []history{
		{"versioned sets in turn", `
10 CALL a/s cget
20 RET a/s cget ok 0 0
21 CALL a/s tryset 3 0
22 RET a/s tryset ok true 1
30 CALL b/s tryset 5 0
40 RET b/s tryset ok false 0`, true},
		{"two sets over one version", `
21 CALL a/s tryset 3 0
22 RET a/s tryset ok true 1
30 CALL b/s tryset 5 0
40 RET b/s tryset ok true 1`, false},
		{"a set refused at the current version", `
21 CALL a/s tryset 3 0
22 RET a/s tryset ok false 0`, false},
		{"a set of unknown outcome", `
21 CALL a/s tryset 3 0
22 RET a/s tryset unknown zk: connection closed
30 CALL b/s tryset 5 1
40 RET b/s tryset ok true 2`, true},
	}, "s", robustness.SharedCountModel, robustness.CounterOperations)
}

func TestQueueCheckFindsItemsTakenTwiceLostOrNeverOffered(t *testing.T) {
	const offers = `
10 CALL a/q offer x1
11 RET a/q offer ok
12 CALL a/q offer x2
13 RET a/q offer ok
14 CALL a/q offer x3
15 RET a/q offer unknown zk: connection closed
`
	for _, c := range []struct {
		name, log  string
		left       []string
		violations int
	}{
		{"every item once, an uncertain second take allowed", offers + `
20 CALL b/q take
21 RET b/q take ok x1
22 CALL c/q take
23 RET c/q take uncertain x1
24 CALL c/q take
25 RET c/q take ok x3`, []string{"x2"}, 0},
		{"an item taken twice", offers + `
20 CALL b/q take
21 RET b/q take ok x1
22 CALL c/q take
23 RET c/q take ok x1`, []string{"x2"}, 1},
		{"an item lost", offers + `
20 CALL b/q take
21 RET b/q take ok x1`, nil, 1},
		{"an item gone with a killed taker", offers + `
20 CALL b/q take
21 RET b/q take ok x1
22 CALL c/q take
23 KILLED c`, nil, 0},
		{"an item never offered", offers + `
20 CALL b/q take
21 RET b/q take ok y9`, []string{"x1", "x2"}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := robustness.CheckQueue(robustness.ForWorkload(parse(t, c.log), "q"), c.left)
			assert.Len(t, rep.Violations(), c.violations, "%q", rep.Violations())
		})
	}
}

func TestWatchCheckRequiresStatesInOrderThatWereWritten(t *testing.T) {
	const writes = `
10 CALL a/s tryset 5 0
11 RET a/s tryset ok true 1
12 CALL a/s tryset 9 1
13 RET a/s tryset unknown zk: connection closed
`
	for _, c := range []struct {
		name, log  string
		violations int
	}{
		{"a subsequence of the writes", writes + `
20 SEEN o/watch 0 0 100
21 SEEN o/watch 2 9 120`, 0},
		{"a state seen twice", writes + `
20 SEEN o/watch 1 5 110
21 SEEN o/watch 1 5 110`, 1},
		{"states out of order", writes + `
20 SEEN o/watch 2 9 120
21 SEEN o/watch 1 5 110`, 1},
		{"a count never written at that version", writes + `
20 SEEN o/watch 1 9 110`, 1},
		{"a set whose client was killed before its reply", writes + `
14 CALL b/s tryset 7 2
15 KILLED b
20 SEEN o/watch 3 7 130`, 0},
		{"two observers each in order", writes + `
20 SEEN o/watch 1 5 110
21 SEEN p/watch 0 0 100
22 SEEN p/watch 1 5 110`, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := robustness.CheckWatch(parse(t, c.log), "s")
			assert.Len(t, rep.Violations, c.violations, "%q", rep.Violations)
		})
	}
}

func TestWatchCheckCountsEveryCacheObserver(t *testing.T) {
	const writes = `
10 CALL a/s tryset 5 0
11 RET a/s tryset ok true 1
`
	for _, c := range []struct {
		name, log  string
		violations int
	}{
		{"a NodeCache and a TreeCache in order", writes + `
20 SEEN p1#nodecache1/watch 0 0 100
21 SEEN p1#nodecache1/watch 1 5 110
22 SEEN p1#treecache1/watch 1 5 110
23 SEEN p1#watchdata1/watch 1 5 110`, 0},
		{"a NodeCache that reports the data before with the new stat", writes + `
20 SEEN p1#nodecache1/watch 0 0 100
21 SEEN p1#nodecache1/watch 1 0 110`, 1},
		{"a TreeCache that goes back", writes + `
20 SEEN p1#treecache1/watch 1 5 110
21 SEEN p1#treecache1/watch 0 0 100`, 1},
		{"a new run of an observer starts again", writes + `
20 SEEN p1#treecache1/watch 1 5 110
21 SEEN p1#treecache2/watch 1 5 110`, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := robustness.CheckWatch(parse(t, c.log), "s")
			assert.Len(t, rep.Violations, c.violations, "%q", rep.Violations)
		})
	}
	rep := robustness.CheckWatch(parse(t, writes+`
20 SEEN o/watch 0 0 100
21 SEEN p1#nodecache1/watch 1 5 110
22 SEEN p1#treecache3/watch 1 5 110
23 SEEN p2#treecache1/watch 1 5 110`), "s")
	assert.Equal(t, map[string]int{robustness.WatchData: 1, robustness.NodeCache: 1, robustness.TreeCache: 2}, rep.ByRecipe)
	assert.Equal(t, 4, rep.Observers)
}

func TestChildrenCheckRequiresListingsInPzxidOrderThatAgree(t *testing.T) {
	for _, c := range []struct {
		name, log  string
		violations int
	}{
		{"two observers, subsequences of one history", `
20 LISTED o#watchchildren1/watch 100 0 0 aa
21 LISTED o#watchchildren1/watch 120 2 2 bb
22 LISTED p#watchchildren1/watch 110 1 1 cc
23 LISTED p#watchchildren1/watch 120 2 2 bb`, 0},
		{"a listing seen twice", `
20 LISTED o#watchchildren1/watch 110 1 1 cc
21 LISTED o#watchchildren1/watch 110 1 1 cc`, 1},
		{"listings out of order", `
20 LISTED o#watchchildren1/watch 120 2 2 bb
21 LISTED o#watchchildren1/watch 110 1 1 cc`, 1},
		{"a stale listing under a new stat", `
20 LISTED o#watchchildren1/watch 110 1 1 cc
21 LISTED o#watchchildren1/watch 120 2 1 cc`, 1},
		{"two observers disagree at one pzxid", `
20 LISTED o#watchchildren1/watch 110 1 1 cc
21 LISTED p#watchchildren1/watch 110 1 1 dd`, 1},
		{"a malformed line", `
20 LISTED o#watchchildren1/watch 110 1`, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := robustness.CheckChildren(parse(t, c.log))
			assert.Len(t, rep.Violations, c.violations, "%q", rep.Violations)
		})
	}
}

func TestObserverActorNamesItsRecipe(t *testing.T) {
	for _, recipe := range append(slices.Clone(robustness.DataRecipes), robustness.Children) {
		a := robustness.ObserverActor("p12", recipe, 34)
		assert.Equal(t, recipe, robustness.Recipe(a), a)
		assert.Equal(t, "watch", robustness.Workload(a))
	}
	assert.Equal(t, robustness.WatchData, robustness.Recipe("p1#3/watch"))
	assert.Equal(t, robustness.WatchData, robustness.Recipe("o/watch"))
}
