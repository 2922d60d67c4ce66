package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The child watch go-zookeeper holds is set again, behind a recursive
// addWatch on its path (writeAddLocked), at the zxid it was set at; while
// one is asked for and not answered, at 0 (a change since is unknown).
func TestShotsChildWatchZxid(t *testing.T) {
	var s shots
	_, ok := s.child("/a")
	assert.False(t, ok)
	s.wrote(childReq(1, "/a"), nil)
	z, ok := s.child("/a")
	assert.True(t, ok)
	assert.Zero(t, z)
	s.repliedAt(1, CodeOK, 33)
	z, ok = s.child("/a")
	assert.True(t, ok)
	assert.Equal(t, int64(33), z)
	s.newConnection() // held across connections
	z, ok = s.child("/a")
	assert.True(t, ok)
	assert.Equal(t, int64(33), z)
	s.fired([]byte("/a"), 4)
	_, ok = s.child("/a")
	assert.False(t, ok)
}

func childReq(xid int32, path string) []byte {
	b := append([]byte(nil), req2(xid, path)...)
	b[11] = opGetChildren2
	return b
}
