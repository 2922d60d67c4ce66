package zkr_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An add that cannot fit a new SharedCount is refused before the node is
// created. This failed before: the node was created holding 0 first.
func TestZkrCount_AddThatOverflowsANewCountCreatesNoNode(t *testing.T) {
	c := server(t)
	servers := strings.Join(c.Servers(), ",")
	path := testPath(t) + "/n"

	code, _, stderr := run(t, servers, "count", "add", path, "3000000000")
	assert.Equal(t, 64, code, stderr)
	assert.Contains(t, stderr, "does not fit a SharedCount")
	exists, _, err := raw(t, c).Exists(path)
	require.NoError(t, err)
	assert.False(t, exists, "no node may be left by a refused add")
}
