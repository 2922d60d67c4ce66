package zkrecipes

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A deletion the event callback saw before the node's hold was registered
// is reported to the registration (the race holdwatch.go describes).
func TestHeldNodesReportADeletionSeenBeforeTheHoldWasRegistered(t *testing.T) {
	var hn heldNodes
	assert.False(t, hn.deleted("/a/n1"), "nothing is held yet")
	assert.True(t, hn.add(&hold{node: ownNode{path: "/a/n1"}}), "the deletion came just before")
	assert.False(t, hn.add(&hold{node: ownNode{path: "/a/n2"}}), "another node was not deleted")
	assert.True(t, hn.deleted("/a/n2"), "a registered node's deletion is the callback's to report")
}

// A hold is unregistered only by itself: a later hold of the same path
// stays.
func TestHeldNodesRemoveOnlyTheirOwnEntry(t *testing.T) {
	var hn heldNodes
	old, cur := &hold{node: ownNode{path: "/a/n"}}, &hold{node: ownNode{path: "/a/n"}}
	hn.add(old)
	hn.add(cur)
	hn.remove(old)
	assert.Same(t, cur, hn.get("/a/n"))
	hn.remove(cur)
	assert.Nil(t, hn.get("/a/n"))
	assert.Zero(t, hn.size())
}
