package zkrecipes

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNodeCacheRejectsBadInputOnStart(t *testing.T) {
	ctx := context.Background()
	assert.ErrorIs(t, NewNodeCache(nil, "/a").Start(ctx), ErrNilSession)
	assert.ErrorIs(t, NewNodeCache(&Session{}, "a").Start(ctx), ErrInvalidPath)
	var nilCtx context.Context
	assert.ErrorIs(t, NewNodeCache(&Session{}, "/a").Start(nilCtx), ErrInvalidArgument)
}

func TestNodeCacheClosedBeforeStartClosesEventsAndCannotStart(t *testing.T) {
	c := NewNodeCache(&Session{}, "/a")
	assert.NoError(t, c.Close(context.Background()))
	assert.NoError(t, c.Close(context.Background()), "Close is idempotent")
	_, open := <-c.Events()
	assert.False(t, open)
	assert.ErrorIs(t, c.Start(context.Background()), ErrCacheStarted)
	_, ok := c.Get()
	assert.False(t, ok)
}

func TestCacheEventKindNames(t *testing.T) {
	assert.Equal(t, "NODE_CREATED", NodeCreated.String())
	assert.Equal(t, "CacheEventKind(99)", CacheEventKind(99).String())
}
