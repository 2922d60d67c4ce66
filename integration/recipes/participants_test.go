package recipes_test

import (
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
)

// A node the server refuses to read makes Participants fail with an error
// that names that node and keeps the server's answer for errors.Is.
func TestParticipants_ARefusedReadNamesTheNode(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	cl := connect(t, c, nil)
	ctx := ctxT(t, 20*time.Second)
	path := testPath(t)
	m := zr.NewMutex(cl.Session, path)
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, l.Release(ctx)) }()
	unreadable := path + "/_c_00000000-0000-0000-0000-000000000000-lock-9999999999"
	_, err = conn.Create(unreadable, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll&^zk.PermRead))
	require.NoError(t, err)
	defer func() { _ = conn.Delete(unreadable, -1) }()

	_, err = m.Participants(ctx)
	require.ErrorIs(t, err, zk.ErrNoAuth)
	assert.ErrorIs(t, err, zr.ErrNotAuthorized)
	assert.True(t, strings.HasPrefix(err.Error(), "zkrecipes: getData "+unreadable+": "), err.Error())
}
