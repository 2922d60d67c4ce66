package recipes_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
)

// Recipes honour the Session's ACL and digest auth: what a client without
// the credentials can and cannot do to a lock (see docs/security.md).

const alicePW = "alice-secret"

// secPath is a top-level path of its own, so that every parent the recipe
// creates gets the Session's ACL.
func secPath(t *testing.T) string { return "/sec-" + unsafe.ReplaceAllString(t.Name(), "_") }

// inspector is a raw connection authenticated as alice, to look at what
// the recipes created.
func inspector(t *testing.T) *zk.Conn {
	conn := raw(t, server(t))
	require.NoError(t, conn.AddAuth("digest", []byte("alice:"+alicePW)))
	return conn
}

func aclOf(t *testing.T, conn *zk.Conn, path string) []zk.ACL {
	acl, _, err := conn.GetACL(path)
	require.NoError(t, err, path)
	return acl
}

func TestSecurity_WithoutCredentialsNeitherDeleteNorTakeTheLock(t *testing.T) {
	c := server(t)
	root := secPath(t)
	dir := root + "/locks/job"
	aliceACL := []zr.ACL{zr.DigestACL("alice", alicePW, zr.PermAll)}
	alice := connect(t, c, nil, zr.WithDigestAuth("alice", alicePW), zr.WithACL(aliceACL))
	ctx := ctxT(t, 30*time.Second)
	l, err := zr.NewMutex(alice.Session, dir).Acquire(ctx)
	require.NoError(t, err)
	node := zkPath(alice.Session, l.Path())

	insp := inspector(t)
	want := []zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: aliceACL[0].ID}}
	for _, p := range []string{root, root + "/locks", dir, node} {
		assert.Equal(t, want, aclOf(t, insp, p), "created with the Session's ACL: %s", p)
	}

	for name, opts := range map[string][]zr.SessionOption{
		"no credentials":                    nil,
		"wrong credentials":                 {zr.WithDigestAuth("mallory", "guess")},
		"alice's user name, wrong password": {zr.WithDigestAuth("alice", "guess")},
	} {
		t.Run(name, func(t *testing.T) {
			m := connect(t, c, nil, opts...)
			err := m.Conn().Delete(node, -1)
			assert.ErrorIs(t, err, zk.ErrNoAuth, "delete of the holder's node")

			start := time.Now()
			_, err = zr.NewMutex(m.Session, dir).TryAcquire(ctx)
			assert.ErrorIs(t, err, zk.ErrNoAuth, "TryAcquire")
			_, err = zr.NewMutex(m.Session, dir).Acquire(ctx)
			assert.ErrorIs(t, err, zk.ErrNoAuth, "Acquire fails, it does not wait")
			_, err = zr.NewMutex(m.Session, dir).Participants(ctx)
			assert.ErrorIs(t, err, zk.ErrNoAuth, "the queue is not even readable")
			assert.Less(t, time.Since(start), 5*time.Second, "no retry loop on an ACL error")

			kids, _, err := insp.Children(dir)
			require.NoError(t, err)
			assert.Equal(t, []string{baseName(node)}, kids, "no node left by the refused client")
			assert.NoError(t, l.Err(), "alice still holds")
		})
	}
	require.NoError(t, l.Release(ctx))
}

func TestSecurity_CreatorACLWithoutAuthFailsWithoutANode(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	dir := secPath(t)
	cl := connect(t, c, nil, zr.WithACL(zr.CreatorACL())) // no WithDigestAuth
	_, err := zr.NewMutex(cl.Session, dir).Acquire(ctxT(t, 20*time.Second))
	assert.ErrorIs(t, err, zk.ErrInvalidACL)
	ok, _, err := conn.Exists(dir)
	require.NoError(t, err)
	assert.False(t, ok)
}

func TestSecurity_WorldReadableQueueStillRefusesStrangers(t *testing.T) {
	c := server(t)
	dir := secPath(t)
	acl := []zr.ACL{zr.DigestACL("alice", alicePW, zr.PermAll), {Perms: zr.PermRead, Scheme: "world", ID: "anyone"}}
	alice := connect(t, c, nil, zr.WithDigestAuth("alice", alicePW), zr.WithACL(acl))
	ctx := ctxT(t, 20*time.Second)
	l, err := zr.NewMutex(alice.Session, dir, zr.WithNodeData([]byte("host-a"))).Acquire(ctx)
	require.NoError(t, err)
	m := connect(t, c, nil)
	ps, err := zr.NewMutex(m.Session, dir).Participants(ctx)
	require.NoError(t, err, "READ lets anyone see the queue and the node data")
	require.Len(t, ps, 1)
	assert.Equal(t, "host-a", string(ps[0].Data))
	_, err = zr.NewMutex(m.Session, dir).TryAcquire(ctx)
	assert.ErrorIs(t, err, zk.ErrNoAuth, "but not join it")
	assert.ErrorIs(t, m.Conn().Delete(zkPath(alice.Session, l.Path()), -1), zk.ErrNoAuth)
	require.NoError(t, l.Release(ctx))
}

// ACLs are per node and not inherited: delete permission is checked on the
// parent. A lock node with a strict ACL under a parent someone else created
// open can be deleted, and the lock taken, by anyone.
func TestSecurity_AnOpenParentLetsAnyoneDeleteAStrictLockNode(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	dir := secPath(t)
	_, err := conn.Create(dir, nil, 0, zk.WorldACL(zk.PermAll)) // made open by someone else
	require.NoError(t, err)
	t.Cleanup(func() { _ = deleteTree(conn, dir) })
	alice := connect(t, c, nil, zr.WithDigestAuth("alice", alicePW),
		zr.WithACL([]zr.ACL{zr.DigestACL("alice", alicePW, zr.PermAll)}))
	ctx := ctxT(t, 20*time.Second)
	l, err := zr.NewMutex(alice.Session, dir).Acquire(ctx)
	require.NoError(t, err)

	m := connect(t, c, nil)
	require.NoError(t, m.Conn().Delete(zkPath(alice.Session, l.Path()), -1), "the open parent's DELETE permission decides")
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("holder not told its node was deleted")
	}
	assert.ErrorIs(t, l.Err(), zr.ErrNodeDeleted)
	l2, err := zr.NewMutex(m.Session, dir).TryAcquire(ctx)
	require.NoError(t, err, "and the parent's CREATE permission lets anyone queue and take it")
	require.NoError(t, l2.Release(ctx))
}

func baseName(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}
