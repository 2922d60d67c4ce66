package wire

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNotifierClosesOnlyForTheCreateOfTheExpectedPath(t *testing.T) {
	frame := func(op uint32, path string) []byte {
		f := make([]byte, 16+len(path)+8)
		binary.BigEndian.PutUint32(f[0:4], uint32(len(f)-4))
		binary.BigEndian.PutUint32(f[4:8], 7) // xid
		binary.BigEndian.PutUint32(f[8:12], op)
		binary.BigEndian.PutUint32(f[12:16], uint32(len(path)))
		copy(f[16:], path)
		return f
	}
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	n := newNotifier()
	n.wrote(frame(opCreate, "/a/_c_x-lock-"), 42) // nobody waits: nothing to do
	sent, forget := n.expect("/a/_c_x-lock-")
	defer forget()

	n.wrote(frame(12, "/a/_c_x-lock-"), 42) // a listing, not a create
	n.wrote(frame(opCreate, "/a/_c_y-lock-"), 42)
	n.wrote(frame(opCreate, "/a/_c_x-lock-")[:20], 42) // path cut short
	bad := frame(opCreate, "/a/_c_x-lock-")
	binary.BigEndian.PutUint32(bad[12:16], 1<<31) // negative length
	n.wrote(bad, 42)
	n.wrote([]byte{0, 0, 0, 1}, 42)
	require.False(t, closed(sent.done))

	n.wrote(frame(opCreate2, "/a/_c_x-lock-"), 7)
	require.True(t, closed(sent.done))
	assert.EqualValues(t, 7, sent.sid, "the session of the connection the create went over")
	assert.Zero(t, n.waiting.Load())
	n.wrote(frame(opCreate2, "/a/_c_x-lock-"), 8) // a retried create: already told
	assert.EqualValues(t, 7, sent.sid)
	forget()
	assert.Zero(t, n.waiting.Load())

	_, forget2 := n.expect("/b")
	assert.EqualValues(t, 1, n.waiting.Load())
	forget2()
	assert.Zero(t, n.waiting.Load(), "forget drops a path that was never sent")
}

// The connection reads the zxid of a create's successful reply (the
// created node's czxid) for the create frame it told of, matched by xid;
// a failed reply, another xid, a frame cut short, or a create forgotten
// before its reply leaves it unknown.
func TestNotifierReadsTheZxidOfTheReplyToTheCreateItToldOf(t *testing.T) {
	create := func(xid uint32, path string) []byte {
		f := make([]byte, 16+len(path)+8)
		binary.BigEndian.PutUint32(f[0:4], uint32(len(f)-4))
		binary.BigEndian.PutUint32(f[4:8], xid)
		binary.BigEndian.PutUint32(f[8:12], opCreate)
		binary.BigEndian.PutUint32(f[12:16], uint32(len(path)))
		copy(f[16:], path)
		return f
	}
	reply := func(xid uint32, zxid uint64, code uint32, path string) []byte {
		f := make([]byte, 24+len(path))
		binary.BigEndian.PutUint32(f[0:4], uint32(len(f)-4))
		binary.BigEndian.PutUint32(f[4:8], xid)
		binary.BigEndian.PutUint64(f[8:16], zxid)
		binary.BigEndian.PutUint32(f[16:20], code)
		binary.BigEndian.PutUint32(f[20:24], uint32(len(path)))
		copy(f[24:], path)
		return f
	}
	n := newNotifier()
	const made = "/a/_c_x-lock-0000000003"

	sent, forget := n.expect("/a/_c_x-lock-")
	assert.False(t, n.awaits(9), "nothing written yet")
	n.wrote(create(9, "/a/_c_x-lock-"), 42)
	require.True(t, n.awaits(9))
	assert.False(t, n.awaits(10), "another request's reply")
	n.replied(reply(9, 0x1234, 0, made)[:22]) // cut short
	forget()
	z, p := sent.Created()
	assert.Zero(t, z, "a reply cut short tells nothing")
	assert.Empty(t, p)
	assert.Zero(t, n.awaiting.Load())

	sent, forget = n.expect("/a/_c_x-lock-")
	n.wrote(create(11, "/a/_c_x-lock-"), 42)
	n.replied(reply(11, 0x1235, uint32(0xffffff92), "")) // NodeExists (-110)
	forget()
	z, _ = sent.Created()
	assert.Zero(t, z, "a failed create made no node")

	sent, forget = n.expect("/a/_c_x-lock-")
	n.wrote(create(12, "/a/_c_x-lock-"), 42)
	forget()
	assert.False(t, n.awaits(12), "forgotten: its reply is not read")
	n.replied(reply(12, 0x1236, 0, made))
	z, _ = sent.Created()
	assert.Zero(t, z)
	assert.Zero(t, n.awaiting.Load())

	sent, forget = n.expect("/a/_c_x-lock-")
	n.wrote(create(13, "/a/_c_x-lock-"), 42)
	n.replied(reply(14, 0x1237, 0, made)) // not its xid
	n.replied(reply(13, 0x1238, 0, made))
	assert.Zero(t, n.awaiting.Load(), "taken once")
	n.replied(reply(13, 0x1239, 0, made)) // never read twice
	forget()
	z, p = sent.Created()
	assert.EqualValues(t, 0x1238, z, "the zxid of the create's own reply")
	assert.Equal(t, made, p, "the path the reply names")
}
