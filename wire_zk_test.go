package zkrecipes

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// With the wire layer (the default), the Session learns the session
// timeout the server granted; without it, Connect's connection is plain:
// the Session goes by the timeout it asked for, and the recipes still work.
func TestZKWireLayerOffDialsPlainlyAndRecipesStillWork(t *testing.T) {
	const asked = 10 * time.Minute // above any server's maxSessionTimeout by default (20 ticks)
	_, on := zkSession(t, 30*time.Second, WithSessionTimeout(asked))
	require.NotNil(t, on.wire)
	assert.Less(t, on.grantedTimeout(), asked, "the server's grant, read off the handshake")

	ctx, off := zkSession(t, 30*time.Second, WithSessionTimeout(asked), WithWireLayer(false))
	assert.Nil(t, off.wire, "no layer: no sniffing, gathering, create notice or SetWatches ordering")
	assert.Equal(t, asked, off.grantedTimeout(), "the timeout asked for")
	dir := "/zkt/nowire-" + newUUID()
	l, err := NewMutex(off, dir).Acquire(ctx)
	require.NoError(t, err)
	_, err = NewMutex(on, dir).TryAcquire(ctx)
	require.ErrorIs(t, err, ErrLocked)
	require.NoError(t, l.Release(ctx))
	l, err = NewMutex(on, dir).Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
}
