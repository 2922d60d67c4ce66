package robustness_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/zkrecipes/zkrecipes/integration/robustness"
)

const workPuts = `
10 CALL a/w put x1
11 RET a/w put ok
12 CALL a/w put x2
13 RET a/w put unknown zk: connection closed
`

// workTaken: b takes x1.
const workTaken = workPuts + `
20 CALL b/w take
21 ACQUIRED b/w 100 x1 queue-0000000000`

// workLostRetaken: b is told it lost x1, which c then takes.
const workLostRetaken = workTaken + `
25 DONE b/w 100 lost zkrecipes: ownership lost: suspended
26 STOP b/w 100 lost
40 CALL c/w take
41 ACQUIRED c/w 200 x1 queue-0000000000`

func TestWorkQueueModelJudgesTakesAndAcks(t *testing.T) {
	judge(t, []history{
		{"taken, acked", workTaken + `
30 STOP b/w 100 ack
31 CALL b/w ack 100
32 DONE b/w 100 released zkrecipes: released
33 RET b/w ack ok 100`, true},
		{"released, taken again, acked", workTaken + `
30 STOP b/w 100 release
31 CALL b/w release 100
33 RET b/w release ok 100
40 CALL c/w take
41 ACQUIRED c/w 200 x1 queue-0000000002
50 STOP c/w 200 ack
51 CALL c/w ack 200
53 RET c/w ack ok 200`, true},
		{"taken again after the first consumer was told of its loss, whose ack then fails", workLostRetaken + `
42 CALL b/w ack 100
43 RET b/w ack lost 100 zkrecipes: work item lost
50 STOP c/w 200 ack
51 CALL c/w ack 200
53 RET c/w ack ok 200`, true},
		{"acked after its lock was lost, nobody having taken it since", workTaken + `
25 DONE b/w 100 lost zkrecipes: ownership lost: suspended
26 STOP b/w 100 lost
42 CALL b/w ack 100
43 RET b/w ack ok 100`, true},
		{"acked by a consumer another took the item from", workLostRetaken + `
42 CALL b/w ack 100
43 RET b/w ack ok 100`, false},
		{"taken while another consumer holds it", workTaken + `
40 CALL c/w take
41 ACQUIRED c/w 200 x1 queue-0000000000
50 STOP b/w 100 ack
51 CALL b/w ack 100
53 RET b/w ack lost 100 zkrecipes: work item lost`, false},
		{"taken after it was acked", workTaken + `
30 STOP b/w 100 ack
31 CALL b/w ack 100
33 RET b/w ack ok 100
40 CALL c/w take
41 ACQUIRED c/w 200 x1 queue-0000000000`, false},
		{"an ack of unknown outcome, the item taken again", workTaken + `
30 STOP b/w 100 ack
31 CALL b/w ack 100
33 RET b/w ack unknown 100 zkrecipes: outcome unknown
40 CALL c/w take
41 ACQUIRED c/w 200 x1 queue-0000000000
50 STOP c/w 200 ack
51 CALL c/w ack 200
53 RET c/w ack ok 200`, true},
		{"an item of unknown put taken", workPuts + `
20 CALL b/w take
21 ACQUIRED b/w 100 x2 queue-0000000001
30 STOP b/w 100 shutdown
60 KILLED b`, true},
		{"an item nobody put taken", workPuts + `
20 CALL b/w take
21 ACQUIRED b/w 100 y9 queue-0000000001`, false},
	}, "w", robustness.WorkQueueModel, robustness.WorkQueueOperations)
}

func TestWorkQueueCheckFindsItemsLostTakenWhileHeldOrLocksLeft(t *testing.T) {
	for _, c := range []struct {
		name, log             string
		drained               []string
		atClose, afterExpiry  []string
		violations, explained int
	}{
		{"acked, or left and drained", workTaken + `
31 CALL b/w ack 100
33 RET b/w ack ok 100`, nil, nil, nil, 0, 0},
		{"left in the queue and drained", workPuts, []string{"x1"}, nil, nil, 0, 0},
		{"an item put and never consumed", workPuts, nil, nil, nil, 1, 0},
		{"an item whose ack's client was killed", workTaken + `
31 CALL b/w ack 100
32 KILLED b`, nil, nil, nil, 0, 0},
		{"taken again after the first consumer was told of its loss", workTaken + `
25 DONE b/w 100 lost zkrecipes: ownership lost: suspended
40 CALL c/w take
41 ACQUIRED c/w 200 x1 queue-0000000000
45 STOP b/w 100 lost
51 CALL c/w ack 200
53 RET c/w ack ok 200`, nil, nil, nil, 0, 1},
		{"taken again before the first consumer was told of its loss", workTaken + `
40 CALL c/w take
41 ACQUIRED c/w 200 x1 queue-0000000000
44 DONE b/w 100 lost zkrecipes: ownership lost: suspended
45 STOP b/w 100 lost
51 CALL c/w ack 200
53 RET c/w ack ok 200`, nil, nil, nil, 1, 0},
		{"a lock left by a closed session", workPuts, []string{"x1"}, []string{"queue-0000000000 (session 0x1 of p1)"}, nil, 1, 0},
		{"a lock left after expiry", workPuts, []string{"x1"}, nil, []string{"queue-0000000000"}, 1, 0},
		{"an item nobody put drained", workPuts, []string{"x1", "y9"}, nil, nil, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := robustness.CheckWorkQueue(robustness.ForWorkload(parse(t, c.log), "w"), c.drained, c.atClose, c.afterExpiry)
			assert.Len(t, rep.Violations(), c.violations, "%q", rep.Violations())
			assert.Equal(t, c.explained, rep.Explained)
		})
	}
}
