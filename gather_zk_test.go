package zkrecipes

import (
	"encoding/binary"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/wire"
)

// Request opcodes the tests look for on the wire.
const (
	opCreate     = 1
	opCreate2    = 15
	opSetWatches = 101
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
	case opCreate, opCreate2:
		return "create"
	case 4:
		return "getData"
	case 12:
		return "getChildren"
	}
	return "op" + strconv.Itoa(int(op))
}

// A waiter behind another waiter sets its two watches on the node ahead
// in one write, and does not read its own node: its token is its node's
// czxid, taken from its create's reply, even when a child was created
// between its create and its listing (so that the listing's pzxid cannot
// serve, see listingToken): two requests, one round trip.
func TestZKWaiterSendsBothWatchesInOneWriteWithoutReadingItsOwnNode(t *testing.T) {
	for _, tc := range []struct {
		name      string
		interpose bool // create a child between the waiter's create and its listing
	}{{"listing right behind the create", false}, {"a child created before the listing", true}} {
		t.Run(tc.name, func(t *testing.T) { testWaiterWrites(t, tc.interpose) })
	}
}

func testWaiterWrites(t *testing.T, interpose bool) {
	// However late a loaded machine runs the third request, the first two
	// wait for it (restored after the Sessions' cleanups, which run first).
	t.Cleanup(func(d time.Duration) func() { return func() { wire.GatherWait = d } }(wire.GatherWait))
	wire.GatherWait = time.Hour
	dir := "/zkt/gather-" + newUUID()
	ctx, l0, ahead, secondGot := holdAndQueue(t, dir)
	raw := zkRaw(t)

	var mu sync.Mutex
	var writes [][]string
	var once sync.Once
	var interposeErr error
	beforeWrite := func(p []byte) {
		if interpose && isListing(p, dir) {
			once.Do(func() {
				// Once the server shows the third contender's node, one
				// more child, behind it, before its listing.
				awaitChildren(ctx, raw, dir, 3)
				_, interposeErr = raw.Create(dir+"/_c_interposed-lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
			})
		}
		mu.Lock()
		defer mu.Unlock()
		writes = append(writes, frameOps(p))
	}
	_, third := zkSession(t, 30*time.Second, WithDialer(hookedDialer(beforeWrite, nil)))
	thirdGot := make(chan queued, 1)
	go func() {
		l, err := NewMutex(third, dir).Acquire(ctx)
		thirdGot <- queued{l, err}
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
	require.NoError(t, interposeErr)
	assert.Contains(t, burst, "getChildren "+ahead)
	assert.Len(t, burst, 2, "one write, without reading its own node: %q", burst)
	mu.Lock()
	for _, w := range writes {
		for _, op := range w {
			assert.NotRegexp(t, "^(getChildren|getData) "+dir+"/_c_.*-lock-0+2$", op, "the third contender reads its own node")
		}
	}
	mu.Unlock()

	leases := passDown(t, ctx, l0, secondGot, thirdGot)
	l1, l2 := leases[1], leases[2]
	_, st, err := raw.Get(l2.Path())
	require.NoError(t, err)
	// From its create's reply: its czxid.
	assert.Equal(t, st.Czxid, l2.Token())
	assert.Greater(t, l2.Token(), l1.Token())
	require.NoError(t, l2.Release(ctx))
}
