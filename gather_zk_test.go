package zkrecipes

import (
	"encoding/binary"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// frameOps splits what one Write carried into request frames and returns
// each one's opcode and path ("op path").
func frameOps(p []byte) []string {
	var ops []string
	for len(p) >= 16 {
		n := int(binary.BigEndian.Uint32(p[0:4])) + 4
		l := int(binary.BigEndian.Uint32(p[12:16]))
		if n > len(p) || 16+l > n {
			break
		}
		op := binary.BigEndian.Uint32(p[8:12])
		ops = append(ops, opName(op)+" "+string(p[16:16+l]))
		p = p[n:]
	}
	return ops
}

func opName(op uint32) string {
	switch op {
	case 4:
		return "getData"
	case 12:
		return "getChildren"
	}
	return "op" + strconv.Itoa(int(op))
}

// A waiter behind another waiter reads its own node and sets its two
// watches on the node ahead in one round trip: the three requests leave
// in one write, not three.
func TestZKWaiterSendsItsOwnReadAndBothWatchesInOneWrite(t *testing.T) {
	// However late a loaded machine runs the third request, the first two
	// wait for it (restored after the Sessions' cleanups, which run first).
	t.Cleanup(func(d time.Duration) func() { return func() { gatherWait = d } }(gatherWait))
	gatherWait = time.Hour
	dir := "/zkt/gather-" + newUUID()
	ctx, first := zkSession(t, 30*time.Second)
	l0, err := NewMutex(first, dir).Acquire(ctx)
	require.NoError(t, err)
	_, second := zkSession(t, 30*time.Second)
	secondGot := make(chan *Lease, 1)
	go func() {
		l, err := NewMutex(second, dir).Acquire(ctx)
		assert.NoError(t, err)
		secondGot <- l
	}()
	raw := zkRaw(t)
	var kids []string
	require.Eventually(t, func() bool {
		kids, _, err = raw.Children(dir)
		return err == nil && len(kids) == 2
	}, 10*time.Second, time.Millisecond, "the second contender queues")
	ahead := dir + "/" + sortNodes(kids, mutexMarkers)[1].name

	var mu sync.Mutex
	var writes [][]string
	beforeWrite := func(p []byte) {
		mu.Lock()
		defer mu.Unlock()
		writes = append(writes, frameOps(p))
	}
	_, third := zkSession(t, 30*time.Second, WithDialer(hookedDialer(beforeWrite, nil)))
	thirdGot := make(chan *Lease, 1)
	go func() {
		l, err := NewMutex(third, dir).Acquire(ctx)
		assert.NoError(t, err)
		thirdGot <- l
	}()
	var burst []string
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, w := range writes {
			for _, op := range w {
				if op == "getData "+ahead {
					burst = w
					return true
				}
			}
		}
		return false
	}, 10*time.Second, time.Millisecond, "the third contender watches the second")
	require.Len(t, burst, 3, "one write: %q", burst)
	assert.Contains(t, burst, "getChildren "+ahead)
	own := ""
	for _, op := range burst {
		if op != "getData "+ahead && op != "getChildren "+ahead {
			own = op
		}
	}
	assert.Regexp(t, "^getChildren "+dir+"/_c_.*-lock-", own, "the third one's own node")

	require.NoError(t, l0.Release(ctx))
	l1 := <-secondGot
	require.NotNil(t, l1)
	require.NoError(t, l1.Release(ctx))
	l2 := <-thirdGot
	require.NotNil(t, l2)
	require.NoError(t, l2.Release(ctx))
}
