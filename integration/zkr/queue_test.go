package zkr_test

import (
	"context"
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// zkr queue's exit statuses besides the node commands' (zkr queue --help).
const (
	exitNoItem      = 73
	exitInterrupted = 130
)

// queueFrame is a node's data in Curator's queue item encoding
// (ItemSerializer): version 0x00010001, per item 0x01, a length and the
// bytes, then 0x02.
func queueFrame(items ...string) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0x00010001)
	for _, it := range items {
		b = append(b, 0x01)
		b = binary.BigEndian.AppendUint32(b, uint32(len(it)))
		b = append(b, it...)
	}
	return append(b, 0x02)
}

// queueItems lists the children of the queue at q from outside, sorted
// as consumers take them.
func queueItems(t *testing.T, conn *zk.Conn, q string) []string {
	kids := children(t, conn, q)
	slices.Sort(kids)
	return kids
}

func TestZkrQueue_PutTakeAckInOrderSkippingLockedItems(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	base := testPath(t)
	fresh(t, conn, base)
	q, locks := base+"/jobs", base+"/jobs-locks"

	code, out, stderr := run(t, c.ConnectString(), "queue", "put", q, "first")
	require.Equal(t, exitOK, code, stderr)
	assert.Empty(t, out, "put prints nothing")
	code, _, stderr = zkrIn(t, c.ConnectString(), []byte("second\x00\nline"), "queue", "put", q, "-")
	require.Equal(t, exitOK, code, stderr)
	code, _, stderr = run(t, c.ConnectString(), "queue", "put", q, "--", "-third")
	require.Equal(t, exitOK, code, stderr)

	items := queueItems(t, conn, q)
	require.Len(t, items, 3)
	for _, it := range items {
		assert.True(t, strings.HasPrefix(it, "queue-"), "Curator's item names: %q", it)
	}
	data, st, err := conn.Get(q + "/" + items[0])
	require.NoError(t, err)
	assert.Equal(t, queueFrame("first"), data, "Curator's item encoding")
	assert.Zero(t, st.EphemeralOwner, "an item outlives zkr")

	code, out, stderr = run(t, c.ConnectString(), "queue", "ls", q)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, items[0]+"\tready\n"+items[1]+"\tready\n"+items[2]+"\tready\n", out)

	// Another consumer (as Curator's: an ephemeral node named as the item
	// under the lock path) holds the first item.
	other := c.Observer(t)
	_, err = other.Create(locks, nil, 0, zk.WorldACL(zk.PermAll))
	require.True(t, err == nil || err == zk.ErrNodeExists, "%v", err)
	_, err = other.Create(locks+"/"+items[0], nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	code, out, stderr = run(t, c.ConnectString(), "queue", "ls", q)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, items[0]+"\tlocked\n"+items[1]+"\tready\n"+items[2]+"\tready\n", out)

	code, out, stderr = run(t, c.ConnectString(), "queue", "take", q)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "second\x00\nline", out, "take writes the item as it is, past the locked one")
	assert.Equal(t, []string{items[0], items[2]}, queueItems(t, conn, q), "the ack deleted the item taken")
	assert.Equal(t, []string{items[0]}, children(t, conn, locks), "take left no lock of its own")

	require.NoError(t, conn.Delete(locks+"/"+items[0], -1))
	code, out, stderr = run(t, c.ConnectString(), "queue", "take", q)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "first", out, "the first item once its lock went")
	code, out, stderr = run(t, c.ConnectString(), "queue", "take", q)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "-third", out)
	assert.Empty(t, queueItems(t, conn, q))
	assert.Empty(t, children(t, conn, locks))

	code, out, stderr = run(t, c.ConnectString(), "queue", "ls", q)
	require.Equal(t, exitOK, code, stderr)
	assert.Empty(t, out, "an empty queue lists nothing")
	code, out, _ = run(t, c.ConnectString(), "queue", "ls", base+"/never")
	assert.Equal(t, exitOK, code)
	assert.Empty(t, out, "a queue never used lists nothing")
}

func TestZkrQueue_TakeReleasePutsTheItemBackAtTheTail(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	base := testPath(t)
	fresh(t, conn, base)
	q := base + "/jobs"
	for _, it := range []string{"a", "b"} {
		code, _, stderr := run(t, c.ConnectString(), "queue", "put", q, it)
		require.Equal(t, exitOK, code, stderr)
	}
	code, out, stderr := run(t, c.ConnectString(), "queue", "take", q, "--release")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "a", out)
	items := queueItems(t, conn, q)
	require.Len(t, items, 2, "the released item is back")
	data, _, err := conn.Get(q + "/" + items[1])
	require.NoError(t, err)
	assert.Equal(t, queueFrame("a"), data, "at the tail")
	assert.Empty(t, children(t, conn, q+"-locks"))

	for _, want := range []string{"b", "a"} {
		code, out, stderr = run(t, c.ConnectString(), "queue", "take", q)
		require.Equal(t, exitOK, code, stderr)
		assert.Equal(t, want, out)
	}
	assert.Empty(t, queueItems(t, conn, q))
}

// Items put --id are listed and taken in the order put, whatever their
// ids; remove deletes those of an id that no consumer holds and prints
// how many.
func TestZkrQueue_PutWithIDListsInOrderAndRemoveDeletesTheFreeOnes(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	base := testPath(t)
	fresh(t, conn, base)
	q, locks := base+"/jobs", base+"/jobs-locks"
	for _, it := range [][2]string{{"first", "zz"}, {"second", "aa"}, {"third", "zz"}, {"fourth", "zz"}} {
		code, _, stderr := run(t, c.ConnectString(), "queue", "put", q, it[0], "--id", it[1])
		require.Equal(t, exitOK, code, stderr)
	}
	items := children(t, conn, q)
	slices.SortFunc(items, func(a, b string) int { return strings.Compare(a[len(a)-10:], b[len(b)-10:]) })
	require.Len(t, items, 4)
	for i, id := range []string{"zz", "aa", "zz", "zz"} {
		assert.Regexp(t, `^queue-\|`+id+`\|\d{10}$`, items[i], "Curator's DistributedIdQueue name")
	}
	code, out, stderr := run(t, c.ConnectString(), "queue", "ls", q)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, items[0]+"\tready\n"+items[1]+"\tready\n"+items[2]+"\tready\n"+items[3]+"\tready\n", out, "in the order put")

	// Another consumer (as Curator's: an ephemeral node named as the item
	// under the lock path) holds the third item.
	other := c.Observer(t)
	_, err := other.Create(locks, nil, 0, zk.WorldACL(zk.PermAll))
	require.True(t, err == nil || err == zk.ErrNodeExists, "%v", err)
	_, err = other.Create(locks+"/"+items[2], nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	code, out, stderr = run(t, c.ConnectString(), "queue", "remove", q, "zz")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "2\n", out, "first and fourth; the third is held")
	assert.Equal(t, []string{items[1], items[2]}, queueItems(t, conn, q))
	assert.Equal(t, []string{items[2]}, children(t, conn, locks), "the holder's lock, and no other")

	code, out, stderr = run(t, c.ConnectString(), "queue", "take", q)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "second", out)
	code, out, stderr = run(t, c.ConnectString(), "queue", "remove", q, "nobody")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "0\n", out)
}

func TestZkrQueue_TakeWritesEveryItemOfACuratorBatchAndRefusesForeignData(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	base := testPath(t)
	fresh(t, conn, base)
	q := base + "/jobs"
	for _, p := range []string{base, q} {
		_, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
	}
	// As Curator's putMulti writes a batch.
	_, err := conn.Create(q+"/queue-", queueFrame("x", "y"), zk.FlagSequence, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	code, out, stderr := run(t, c.ConnectString(), "queue", "take", q)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "x\ny\n", out, "each item of a batch, a line")
	assert.Empty(t, queueItems(t, conn, q))

	_, err = conn.Create(q+"/queue-", []byte("not curator's"), zk.FlagSequence, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	code, out, stderr = run(t, c.ConnectString(), "queue", "take", q)
	assert.Equal(t, exitConflict, code, stderr)
	assert.Empty(t, out)
	assert.Contains(t, stderr, "zkr rm", "says what to do")
	items := queueItems(t, conn, q)
	require.Len(t, items, 1, "the item is put back, not dropped")
	data, _, err := conn.Get(q + "/" + items[0])
	require.NoError(t, err)
	assert.Equal(t, "not curator's", string(data))
	assert.Empty(t, children(t, conn, q+"-locks"))
}

func TestZkrQueue_TakeWaitsForAnItemUntilWaitElapsesOrInterrupted(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	base := testPath(t)
	fresh(t, conn, base)
	q := base + "/jobs"

	code, out, stderr := run(t, c.ConnectString(), "queue", "take", q, "--wait", "300ms")
	assert.Equal(t, exitNoItem, code, stderr)
	assert.Empty(t, out)

	w := watchCount(t, c)
	taker := start(t, c.ConnectString(), "queue", "take", q, "-v")
	awaitWaitingTake(t, c, w) // the take found the queue empty and waits for an item
	code, _, stderr = run(t, c.ConnectString(), "queue", "put", q, "late")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, exitOK, taker.wait(t, 30*time.Second), taker.stderr.String())
	assert.Equal(t, "late", taker.stdout.String())
	assert.Empty(t, queueItems(t, conn, q))

	taker = start(t, c.ConnectString(), "queue", "take", q, "-v")
	awaitWaitingTake(t, c, w)
	require.NoError(t, taker.cmd.Process.Signal(syscall.SIGINT))
	assert.Equal(t, exitInterrupted, taker.wait(t, 30*time.Second))
	assert.Empty(t, taker.stdout.String())
	assert.Empty(t, children(t, conn, q+"-locks"), "an interrupted take holds nothing")
}

// watchCount is the number of watches (data and child, every session) on
// c's server.
func watchCount(t *testing.T, c *zktest.Cluster) int {
	t.Helper()
	m, err := zktest.Mntr(context.Background(), c.Servers()[0])
	require.NoError(t, err)
	n, err := strconv.Atoi(m["zk_watch_count"])
	require.NoError(t, err, "mntr: %v", m)
	return n
}

// awaitWaitingTake waits until a zkr queue take started after the server
// held watches watches waits for an item: its Session watches the
// ensemble's configuration, and its take the queue's children (wchp lists
// data watches only, so the count tells).
func awaitWaitingTake(t *testing.T, c *zktest.Cluster, watches int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for n := watchCount(t, c); n < watches+2; n = watchCount(t, c) {
		if time.Now().After(deadline) {
			t.Fatalf("no take waits after 30 s: %d watches on the server, %d before the take", n, watches)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestZkrQueue_BadArgumentsAreUsageErrors(t *testing.T) {
	c := server(t)
	for _, args := range [][]string{
		{"queue"},
		{"queue", "pop", "/q"},
		{"queue", "put", "/q"},
		{"queue", "put", "/q", "a", "b"},
		{"queue", "put", "relative", "a"},
		{"queue", "put", "/q", "a", "--priority", "1", "--delay", "1s"},
		{"queue", "put", "/q", "a", "--priority", "4294967296"},
		{"queue", "take", "/q", "/r"},
		{"queue", "take", "/q", "--wait", "-1s"},
		{"queue", "take", "/q", "--lock-path", "/q/locks", "--wait", "1s"},
		{"queue", "ls", "relative"},
		{"queue", "put", "/q", "a", "--id", "a/b"},
		{"queue", "put", "/q", "a", "--id", ""},
		{"queue", "put", "/q", "a", "--id", "x", "--priority", "1"},
		{"queue", "put", "/q", "a", "--id", "x", "--delay", "1s"},
		{"queue", "remove", "/q"},
		{"queue", "remove", "/q", "a", "b"},
		{"queue", "remove", "/q", "a|b"},
	} {
		code, _, stderr := run(t, c.ConnectString(), args...)
		assert.Equal(t, exitUsage, code, "%q: %s", args, stderr)
	}
	code, out, _ := run(t, c.ConnectString(), "queue", "--help")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "zkr queue put PATH")
}
