package zkrecipes

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Start that fails cleans up in the background: a PersistentNode
// started at the same path meanwhile (discovery's Register after one
// whose ctx had ended) must not lose its node to that clean-up, however
// late it runs. The first node's clean-up is held until the second node
// is in place; its delete would remove the second node.
func TestZKPersistentNodeStartedAfterAFailedStartKeepsItsNodeThroughThatStartsCleanUp(t *testing.T) {
	for _, mode := range []CreateMode{ModePersistent, ModeEphemeral} {
		t.Run(mode.String(), func(t *testing.T) {
			ctx, s := zkSession(t, 30*time.Second)
			raw := zkRaw(t)
			p := "/zkt/kept-" + newUUID()
			t.Cleanup(func() { _ = raw.Delete(p, -1) })
			gone, cancel := context.WithCancel(ctx)
			cancel()

			first := NewPersistentNode(s, p, []byte("first"), WithCreateMode(mode))
			held, release := make(chan struct{}), make(chan struct{})
			first.beforeUndo = func() { close(held); <-release }
			require.ErrorIs(t, first.Start(gone), context.Canceled)
			<-held

			second := NewPersistentNode(s, p, []byte("second"), WithCreateMode(mode))
			require.NoError(t, second.Start(ctx))
			defer func() { assert.NoError(t, second.Close(context.Background())) }()
			_, st, w, err := raw.GetW(p)
			require.NoError(t, err)

			close(release)
			require.NoError(t, first.Close(ctx), "Close waits for the failed Start's clean-up")
			_, st2, err := raw.Get(p)
			require.NoError(t, err, "the second node is in place once the clean-up has run")
			assert.Equal(t, st.Czxid, st2.Czxid, "the same node")
			select {
			case ev := <-w:
				assert.NotEqual(t, zk.EventNodeDeleted, ev.Type, "the clean-up deleted the second node")
			default:
			}
		})
	}
}
