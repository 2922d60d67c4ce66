package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A plain watch carried by a recursive server watch derives its
// NodeChildrenChanged from its node's direct children only.
func TestIsChildIsADirectChildOnly(t *testing.T) {
	for _, c := range []struct {
		parent, path string
		want         bool
	}{
		{"/a", "/a/b", true},
		{"/a", "/a/b/c", false},
		{"/a", "/a", false},
		{"/a", "/ab", false},
		{"/a", "/a/", false},
		{"/", "/a", true},
		{"/", "/a/b", false},
		{"/a/b", "/a/b/c", true},
	} {
		assert.Equal(t, c.want, isChild(c.parent, []byte(c.path)), "%s under %s", c.path, c.parent)
	}
}

// A gap proves nothing changed only when the reply that closes it has the
// zxid of the one that opened it; a gap never opened proves nothing.
func TestGapChangedUnlessTheZxidsAreEqual(t *testing.T) {
	var g gap
	assert.True(t, g.changed(7), "not marked")
	g.mark(7)
	assert.False(t, g.changed(7))
	assert.True(t, g.changed(8))
	assert.False(t, gapAt(9).changed(9))
}

// The reply to a watching request of go-zookeeper's marks the gap it
// opened with the reply's zxid, whatever its error code (an exists on a
// missing node sets a watch too); a request lost with its connection
// marks nothing.
func TestShotsMarkTheGapWithTheReplysZxid(t *testing.T) {
	var s shots
	g := &gap{}
	s.wrote(req2(5, "/a"), g)
	s.repliedAt(4, CodeOK, 40) // another request's
	assert.False(t, g.set.Load())
	s.repliedAt(5, codeNoNode, 50)
	assert.False(t, g.changed(50))

	lost := &gap{}
	s.wrote(req2(6, "/a"), lost)
	s.newConnection()
	s.repliedAt(6, CodeOK, 60)
	assert.False(t, lost.set.Load())
}

// The child watch go-zookeeper holds is set again at the zxid it was set
// at; while one is asked for and not answered, at 0 (a change since is
// unknown).
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
