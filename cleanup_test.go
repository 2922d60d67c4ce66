package zkrecipes

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A keeper holding a path (a PersistentNode started there) is never
// deleted behind by a predecessor: deletes registered before its claim are
// called off, and so are those registered while it holds the path (the
// clean-up of a Start that failed, which runs in the background); once it
// lets go, deletes are sent again.
func TestKeeperClaimCallsOffEveryDeleteOfItsPath(t *testing.T) {
	s := &Session{}
	const p = "/svc/a"
	before := s.deferDelete(p)
	other := s.deferDelete("/svc/b")

	left, release, err := s.claim(context.Background(), p)
	require.NoError(t, err)
	assert.True(t, left, "a delete of the path was pending: a node there may be a predecessor's")
	assert.False(t, before.begin(), "a delete registered before the claim is called off")
	assert.True(t, other.begin(), "a delete of another path is not")
	other.end()

	during := s.deferDelete(p)
	assert.False(t, during.begin(), "a delete registered while the path is held is called off from the start")

	left2, release2, err := s.claim(context.Background(), p)
	require.NoError(t, err)
	assert.True(t, left2, "another keeper still holds the path")
	release2()
	release()
	for _, dd := range []*deferredDelete{before, during} {
		s.undefer(p, dd)
	}
	s.undefer("/svc/b", other)

	after := s.deferDelete(p)
	assert.True(t, after.begin(), "once no keeper holds the path, its deletes are sent")
	after.end()
	s.undefer(p, after)
	left3, release3, err := s.claim(context.Background(), p)
	require.NoError(t, err)
	assert.False(t, left3, "nothing pending, nobody holding: a node at the path is not a predecessor's")
	release3()
	assert.Empty(t, s.claims)
	assert.Empty(t, s.deferred)
}

// A claim waits for a delete already sent to have its reply, so that the
// keeper's requests come after it; when its ctx ends first it returns
// ctx's error, holding nothing.
func TestKeeperClaimWaitsForADeleteInFlight(t *testing.T) {
	s := &Session{}
	const p = "/svc/a"
	dd := s.deferDelete(p)
	require.True(t, dd.begin())

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, _, err := s.claim(ctx, p)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the claim waited for the delete's reply")
	assert.Empty(t, s.claims, "a claim that gave up holds nothing")

	dd.end()
	left, release, err := s.claim(context.Background(), p)
	require.NoError(t, err, "the reply came")
	assert.True(t, left)
	release()
	s.undefer(p, dd)
}
