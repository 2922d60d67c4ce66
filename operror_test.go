package zkrecipes

import (
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// opError lets a nil error through; it failed before (a nil pointer
// dereference on err.Error()).
func TestOpErrorOfNilIsNil(t *testing.T) {
	s := &Session{}
	assert.NotPanics(t, func() { assert.NoError(t, s.opError("create", "/a", nil)) })
	err := s.opError("create", "/a", zk.ErrNoAuth)
	require.ErrorIs(t, err, zk.ErrNoAuth)
	assert.Equal(t, "zkrecipes: create /a: "+zk.ErrNoAuth.Error(), err.Error())
}
