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
