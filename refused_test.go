package zkrecipes

import (
	"errors"
	"fmt"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
)

// A reply no retry can change reaches the caller typed, naming the
// request and saying what to do, and matching ZooKeeper's error too.
func TestRefusalIsTypedNamesTheRequestAndIsNeverRetried(t *testing.T) {
	s := &Session{}
	s.cfg.namespace = "/app"
	for _, tc := range []struct {
		cause, kind error
	}{
		{zk.ErrNoAuth, ErrNotAuthorized},
		{zk.ErrAuthFailed, ErrNotAuthorized},
		{zk.ErrInvalidACL, ErrInvalidACL},
		{zk.ErrBadArguments, ErrInvalidArgument},
	} {
		err := s.refusal("create", "/app/locks/a", tc.cause)
		assert.ErrorIs(t, err, tc.kind, "%v", tc.cause)
		assert.ErrorIs(t, err, tc.cause)
		assert.Contains(t, err.Error(), "zkrecipes: create /locks/a: "+tc.cause.Error()+": ")
		assert.True(t, refused(err), "%v", err)
		assert.False(t, isRetryable(err), "%v", err)
		assert.Same(t, err, s.refusal("delete", "/app/x", err), "typed once")
		wrapped := fmt.Errorf("zkrecipes: lock: %w", err)
		assert.True(t, refused(wrapped))
	}
	for _, err := range []error{nil, zk.ErrNoNode, zk.ErrNodeExists, zk.ErrConnectionClosed, zk.ErrSessionExpired, errors.New("other")} {
		assert.Equal(t, err, s.refusal("create", "/app/a", err), "passes through as it is")
		assert.False(t, refused(err), "%v", err)
	}
	for _, err := range []error{ErrAuthFailed, ErrSASLMechanism, ErrSASLUnavailable, ErrSASLRequired, ErrTLSRefused, ErrTLSUntrusted} {
		assert.True(t, refused(err), "a failure of the Session's security: %v", err)
	}
}
