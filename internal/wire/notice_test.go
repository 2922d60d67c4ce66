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
