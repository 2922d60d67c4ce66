package zkrecipes

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// closedTestSession is a Session never dialled and closed: a call that
// passes its argument checks reaches the request seam and fails there
// with ErrClosed, without I/O.
func closedTestSession(t *testing.T) *Session {
	s := newSession(defaultSessionConfig())
	require.NoError(t, s.Close())
	return s
}

// TrySet refuses only -1 (ZooKeeper's "any version"): a version wrapped
// negative after 2^31-1 writes passes the argument check and goes to the
// server (here, a closed Session's request seam).
func TestTrySetRefusesOnlyMinusOne(t *testing.T) {
	s := closedTestSession(t)
	ctx := context.Background()
	for _, v := range []int32{-1, -2, math.MinInt32, 0, math.MaxInt32} {
		_, errValue := NewSharedValue(s, "/a", nil).TrySet(ctx, []byte("x"), v)
		_, errCount := NewSharedCount(s, "/a", 0).TrySet(ctx, 1, v)
		for name, err := range map[string]error{"SharedValue": errValue, "SharedCount": errCount} {
			if v == -1 {
				assert.ErrorIs(t, err, ErrInvalidArgument, "%s.TrySet(%d)", name, v)
				continue
			}
			assert.NotErrorIs(t, err, ErrInvalidArgument, "%s.TrySet(%d) refused", name, v)
			assert.ErrorIs(t, err, ErrClosed, "%s.TrySet(%d) did not reach the request", name, v)
		}
	}
}

// Every node operation refuses bad input with a typed error before any
// request: a nil Session, a nil ctx, a bad path, an option the operation
// does not take, impossible option values.
func TestNodeOperationsRejectBadInputBeforeAnyRequest(t *testing.T) {
	var nilSession *Session
	unused := &Session{} // never reached: validation comes first
	ctx := context.Background()
	var nilCtx context.Context
	type call func(s *Session, ctx context.Context) error
	create := func(path string, opts ...NodeOption) call {
		return func(s *Session, ctx context.Context) error { _, err := s.Create(ctx, path, nil, opts...); return err }
	}
	ops := map[string]call{
		"Create": create("/a"),
		"Set":    func(s *Session, ctx context.Context) error { _, err := s.Set(ctx, "/a", nil); return err },
		"SetACL": func(s *Session, ctx context.Context) error { _, err := s.SetACL(ctx, "/a", OpenACL()); return err },
		"Delete": func(s *Session, ctx context.Context) error { return s.Delete(ctx, "/a") },
		"Get":    func(s *Session, ctx context.Context) error { _, _, err := s.Get(ctx, "/a"); return err },
		"Exists": func(s *Session, ctx context.Context) error { _, err := s.Exists(ctx, "/a"); return err },
		"Children": func(s *Session, ctx context.Context) error {
			_, _, err := s.Children(ctx, "/a")
			return err
		},
		"GetACL":           func(s *Session, ctx context.Context) error { _, _, err := s.GetACL(ctx, "/a"); return err },
		"Sync":             func(s *Session, ctx context.Context) error { return s.Sync(ctx, "/a") },
		"Ephemerals":       func(s *Session, ctx context.Context) error { _, err := s.Ephemerals(ctx, "/a"); return err },
		"CountDescendants": func(s *Session, ctx context.Context) error { _, err := s.CountDescendants(ctx, "/a"); return err },
		"WhoAmI":           func(s *Session, ctx context.Context) error { _, err := s.WhoAmI(ctx); return err },
		"Multi":            func(s *Session, ctx context.Context) error { _, err := s.Multi(ctx, SetOp("/a", nil)); return err },
	}
	for name, op := range ops {
		require.ErrorIs(t, op(nilSession, ctx), ErrNilSession, name)
		require.ErrorIs(t, op(unused, nilCtx), ErrInvalidArgument, name)
	}

	rows := []struct {
		name string
		call call
		want error
	}{
		{"Create relative path", create("a"), ErrInvalidPath},
		{"Create at the root", create("/"), ErrInvalidPath},
		{"Create in /zookeeper", create("/zookeeper/x"), ErrInvalidPath},
		{"Create unknown mode", create("/a", WithMode(CreateMode(99))), ErrInvalidArgument},
		{"Create TTL mode without WithTTL", create("/a", WithMode(ModePersistentWithTTL)), ErrInvalidArgument},
		{"Create WithTTL in a mode without TTL", create("/a", WithTTL(time.Minute)), ErrInvalidArgument},
		{"Create WithTTL(0)", create("/a", WithMode(ModePersistentWithTTL), WithTTL(0)), ErrInvalidArgument},
		{"Create WithVersion", create("/a", WithVersion(1)), ErrInvalidArgument},
		{"Create nil option", create("/a", nil), ErrInvalidArgument},
		{"Create 2 MB", func(s *Session, ctx context.Context) error {
			_, err := s.Create(ctx, "/a", make([]byte, 2<<20))
			return err
		}, ErrDataTooLarge},
		{"Set WithMode", func(s *Session, ctx context.Context) error {
			_, err := s.Set(ctx, "/a", nil, WithMode(ModeEphemeral))
			return err
		}, ErrInvalidArgument},
		{"Set 2 MB", func(s *Session, ctx context.Context) error {
			_, err := s.Set(ctx, "/a", make([]byte, 2<<20))
			return err
		}, ErrDataTooLarge},
		{"SetACL empty", func(s *Session, ctx context.Context) error { _, err := s.SetACL(ctx, "/a", nil); return err }, ErrInvalidArgument},
		{"Delete WithParents", func(s *Session, ctx context.Context) error { return s.Delete(ctx, "/a", WithParents(true)) }, ErrInvalidArgument},
		{"Delete the root", func(s *Session, ctx context.Context) error { return s.Delete(ctx, "/") }, ErrInvalidPath},
		{"Get relative", func(s *Session, ctx context.Context) error { _, _, err := s.Get(ctx, "a"); return err }, ErrInvalidPath},
		{"Ephemerals relative prefix", func(s *Session, ctx context.Context) error { _, err := s.Ephemerals(ctx, "a"); return err }, ErrInvalidPath},
		{"Multi of no op", func(s *Session, ctx context.Context) error { _, err := s.Multi(ctx); return err }, ErrInvalidArgument},
		{"Multi of the zero Op", func(s *Session, ctx context.Context) error { _, err := s.Multi(ctx, Op{}); return err }, ErrInvalidArgument},
		{"Multi with a bad path", func(s *Session, ctx context.Context) error { _, err := s.Multi(ctx, CheckOp("x")); return err }, ErrInvalidPath},
		{"Multi creating a container", func(s *Session, ctx context.Context) error {
			_, err := s.Multi(ctx, CreateOp("/a", nil, WithMode(ModeContainer)))
			return err
		}, ErrInvalidArgument},
		{"Multi with WithParents", func(s *Session, ctx context.Context) error {
			_, err := s.Multi(ctx, CreateOp("/a", nil, WithParents(true)))
			return err
		}, ErrInvalidArgument},
		{"Multi of 2 MB", func(s *Session, ctx context.Context) error {
			_, err := s.Multi(ctx, SetOp("/a", make([]byte, 2<<20)))
			return err
		}, ErrDataTooLarge},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			s := unused
			if r.want == ErrDataTooLarge {
				s = closedTestSession(t) // Multi checks the size as it sends
			}
			err := r.call(s, ctx)
			require.ErrorIs(t, err, r.want)
			assert.Contains(t, err.Error(), "zkrecipes:")
		})
	}
}

// The wire layer's own reads fail with ErrNeedsWireLayer, before any
// request, on a Session without it (NewSession, WithWireLayer(false)).
func TestOwnReadsNeedTheWireLayer(t *testing.T) {
	s := newSession(defaultSessionConfig())
	s.ready = make(chan struct{})
	close(s.ready)
	s.state = StateConnected
	defer s.Close()
	ctx := context.Background()
	_, err := s.Ephemerals(ctx, "/")
	assert.ErrorIs(t, err, ErrNeedsWireLayer)
	_, err = s.CountDescendants(ctx, "/")
	assert.ErrorIs(t, err, ErrNeedsWireLayer)
	_, err = s.WhoAmI(ctx)
	assert.ErrorIs(t, err, ErrNeedsWireLayer)
}

// The error codes a server answers the wire layer's own reads with come
// back as go-zookeeper's errors, and UNIMPLEMENTED (a server that
// predates the request) as ErrServerTooOld, naming the request.
func TestOwnReadErrorCodesAreTyped(t *testing.T) {
	err := codeError("whoAmI", -6)
	assert.ErrorIs(t, err, ErrServerTooOld)
	assert.Contains(t, err.Error(), "whoAmI")
	assert.ErrorIs(t, codeError("getAllChildrenNumber", -101), zk.ErrNoNode)
	assert.ErrorIs(t, codeError("getEphemerals", -102), zk.ErrNoAuth)
	assert.ErrorIs(t, codeError("getEphemerals", -112), zk.ErrSessionExpired)
	assert.Contains(t, codeError("getEphemerals", -999).Error(), "-999")
}
