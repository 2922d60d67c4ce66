package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

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
