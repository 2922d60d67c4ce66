package zkrecipes

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWatchHelpersRejectBadInputBeforeAnyCall(t *testing.T) {
	ctx := context.Background()
	s := &Session{}
	nop := func([]byte, *NodeStat) error { return nil }
	nopKids := func([]string, *NodeStat) error { return nil }
	assert.ErrorIs(t, WatchData(ctx, nil, "/a", nop), ErrNilSession)
	assert.ErrorIs(t, WatchChildren(ctx, nil, "/a", nopKids), ErrNilSession)
	assert.ErrorIs(t, WatchData(ctx, s, "a/", nop), ErrInvalidPath)
	assert.ErrorIs(t, WatchChildren(ctx, s, "", nopKids), ErrInvalidPath)
	var nilCtx context.Context
	assert.ErrorIs(t, WatchData(nilCtx, s, "/a", nop), ErrInvalidArgument)
	assert.ErrorIs(t, WatchData(ctx, s, "/a", nil), ErrInvalidArgument)
	assert.ErrorIs(t, WatchChildren(ctx, s, "/a", nil), ErrInvalidArgument)
}
