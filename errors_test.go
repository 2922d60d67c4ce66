package zkrecipes

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEveryErrorIsPrefixedAndLowercase(t *testing.T) {
	for _, err := range []error{ErrInvalidPath, ErrInvalidArgument, ErrNilSession, ErrClosed, ErrSessionExpired,
		ErrSessionChanged, ErrSuspended, ErrNodeDeleted, ErrLockLost, ErrReleased, ErrReleaseDeferred, ErrLocked,
		ErrRetriesExhausted, ErrRecipeConflict, ErrUpgrade, ErrNoLeader, ErrBadCount, ErrDataTooLarge} {
		assert.True(t, strings.HasPrefix(err.Error(), "zkrecipes: "), err.Error())
	}
}

func TestLossErrorsMatchLockLostAndTheirCause(t *testing.T) {
	for _, cause := range []error{ErrSuspended, ErrSessionExpired, ErrSessionChanged, ErrNodeDeleted, ErrClosed} {
		err := lost(cause)
		assert.ErrorIs(t, err, ErrLockLost)
		assert.ErrorIs(t, err, cause)
		assert.NotErrorIs(t, err, ErrReleased)
		assert.Equal(t, 1, strings.Count(err.Error(), "zkrecipes:"), err.Error())
	}
}

func TestBadSessionOptionsFailBeforeDialing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	servers := []string{"127.0.0.1:1"} // never dialled: options fail first
	for name, opt := range map[string]SessionOption{
		"zero timeout":     WithSessionTimeout(0),
		"negative timeout": WithSessionTimeout(-time.Second),
		"nil policy":       WithRetryPolicy(nil),
		"empty ACL":        WithACL(nil),
		"empty user":       WithDigestAuth("", "pw"),
		"bad policy":       WithLossPolicy(LossPolicy(9)),
		"nil logger":       WithLogger(nil),
		"nil tracer":       WithTracer(nil),
		"nil dialer":       WithDialer(nil),
		"nil option":       nil,
	} {
		_, err := Connect(ctx, servers, opt)
		assert.ErrorIs(t, err, ErrInvalidArgument, name)
	}
	_, err := Connect(ctx, servers, WithNamespace("bad//ns"))
	assert.ErrorIs(t, err, ErrInvalidPath)
	for _, s := range [][]string{nil, {}, {""}, {"host with space:2181"}} {
		_, err := Connect(ctx, s)
		assert.ErrorIs(t, err, ErrInvalidArgument, "%q", s)
	}
	_, err = NewSession(ctx, nil, nil)
	assert.ErrorIs(t, err, ErrInvalidArgument)
}

func TestConnectHonoursCtxWhenNoServerAnswers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := Connect(ctx, []string{"127.0.0.1:1"})
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestRecipesOnBadInputReturnTypedErrorsWithoutIO(t *testing.T) {
	ctx := context.Background()
	_, err := NewMutex(nil, "/a").Acquire(ctx)
	assert.ErrorIs(t, err, ErrNilSession)
	s := &Session{} // never used: validation fails first
	for _, p := range []string{"", "a", "/a/", "/zookeeper/x"} {
		m := NewMutex(s, p)
		_, err := m.Acquire(ctx)
		assert.ErrorIs(t, err, ErrInvalidPath, p)
		_, err = m.TryAcquire(ctx)
		assert.ErrorIs(t, err, ErrInvalidPath, p)
		_, err = m.Participants(ctx)
		assert.ErrorIs(t, err, ErrInvalidPath, p)
	}
	_, err = NewMutex(s, "/a", nil).Acquire(ctx)
	assert.ErrorIs(t, err, ErrInvalidArgument)
	var nilCtx context.Context
	_, err = NewMutex(s, "/a").Acquire(nilCtx)
	assert.ErrorIs(t, err, ErrInvalidArgument)
	assert.True(t, errors.Is(&PathError{Path: "x"}, ErrInvalidPath))
}

func TestOpErrorNamesThePathAndKeepsTheCause(t *testing.T) {
	s := sessionWith(WithNamespace("/ns"))
	for _, cause := range []error{zk.ErrNoNode, zk.ErrNoAuth, &connLostError{cause: io.EOF}} {
		err := s.opError("read", "/ns/locks/a/_c_x-lock-0000000001", cause)
		assert.ErrorIs(t, err, cause)
		assert.True(t, strings.HasPrefix(err.Error(), "zkrecipes: read /locks/a/_c_x-lock-0000000001: "), err.Error())
	}
	assert.ErrorIs(t, s.opError("list", "/ns/a", &connLostError{cause: io.EOF}), zk.ErrConnectionClosed)
	for _, own := range []error{context.Canceled, context.DeadlineExceeded, ErrClosed, invalidArg("nil context")} {
		assert.Equal(t, own, s.opError("list", "/ns/a", own), "passes through: %v", own)
	}
}
