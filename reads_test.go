package zkrecipes

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// GetData and GetChildren reject a nil Session, a path that is not a
// valid one, and a nil ctx with a typed error, before any request.
func TestSessionReadsRejectBadInputBeforeAnyRequest(t *testing.T) {
	var nilSession *Session
	unused := &Session{} // never reached: validation comes first
	var nilCtx context.Context
	ctx := context.Background()
	rows := []struct {
		name string
		s    *Session
		ctx  context.Context
		path string
		want error
	}{
		{"nil session", nilSession, ctx, "/a", ErrNilSession},
		{"empty path", unused, ctx, "", ErrInvalidPath},
		{"relative path", unused, ctx, "a", ErrInvalidPath},
		{"trailing slash", unused, ctx, "/a/", ErrInvalidPath},
		{"dot segment", unused, ctx, "/a/../b", ErrInvalidPath},
		{"control character", unused, ctx, "/a\x01", ErrInvalidPath},
		{"nil ctx", unused, nilCtx, "/a", ErrInvalidArgument},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			_, _, err := r.s.GetData(r.ctx, r.path)
			require.ErrorIs(t, err, r.want, "GetData")
			_, _, err = r.s.GetChildren(r.ctx, r.path)
			require.ErrorIs(t, err, r.want, "GetChildren")
		})
	}
}

// Every request, whatever sends it, is refused before it is sent when its
// path is too long for any request under the Session's limit, with an
// error that matches ErrInvalidPath and quotes only the path's head.
func TestEveryRequestNamingAPathTooLongIsRefusedBeforeItIsSent(t *testing.T) {
	s := &Session{cfg: sessionConfig{maxReq: 1000}}
	sent := false
	_, err := traced(s, "getData", "/"+strings.Repeat("x", 1000), func() (struct{}, error) {
		sent = true
		return struct{}{}, nil
	})
	require.ErrorIs(t, err, ErrInvalidPath)
	assert.False(t, sent, "the request was sent")
	assert.Less(t, len(err.Error()), 400)
	_, err = traced(s, "getData", "/"+strings.Repeat("x", 1000-requestOverhead-1), func() (struct{}, error) {
		sent = true
		return struct{}{}, nil
	})
	require.NoError(t, err)
	assert.True(t, sent, "a path that fits is sent")
}
