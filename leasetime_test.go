package zkrecipes

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestLeaseTimeAndRevocationRejectBadInputWithATypedError(t *testing.T) {
	unused := &Session{} // never reached: validation comes first
	var rows []badCall
	revokeData := lockOpt(func(c *lockConfig) { // a revocable node whose data reads as a request
		WithRevocable(true).applyLock(c)
		WithNodeData(revokeMessage).applyLock(c)
	})
	for tag, opt := range map[string]LockOption{
		"lease time 0":              WithLeaseTime(0),
		"lease time -1s":            WithLeaseTime(-time.Second),
		"revocable with __REVOKE__": revokeData,
	} {
		rows = append(rows,
			badCall{"Mutex(" + tag + ")", func(ctx context.Context) error { _, err := NewMutex(unused, "/a", opt).Acquire(ctx); return err }, ErrInvalidArgument},
			badCall{"RWMutex(" + tag + ")", func(ctx context.Context) error {
				_, err := NewRWMutex(unused, "/a", opt).ReadLock().Acquire(ctx)
				return err
			}, ErrInvalidArgument},
			badCall{"Semaphore(" + tag + ")", func(ctx context.Context) error {
				_, err := NewSemaphore(unused, "/a", 2, opt).Acquire(ctx, 1)
				return err
			}, ErrInvalidArgument},
			badCall{"SemaphoreMutex(" + tag + ")", func(ctx context.Context) error {
				_, err := NewSemaphoreMutex(unused, "/a", opt).Acquire(ctx)
				return err
			}, ErrInvalidArgument},
		)
	}
	for why, p := range badPaths {
		rows = append(rows, badCall{"Revoke(" + why + " path)", func(ctx context.Context) error { return Revoke(ctx, unused, p) }, ErrInvalidPath})
	}
	var nilCtx context.Context
	rows = append(rows,
		badCall{"Revoke(nil session)", func(ctx context.Context) error { return Revoke(ctx, nil, "/a") }, ErrNilSession},
		badCall{"Revoke(nil ctx)", func(context.Context) error { return Revoke(nilCtx, unused, "/a") }, ErrInvalidArgument},
	)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			err := callNoPanic(t, func() error { return row.call(ctx) })
			assert.ErrorIs(t, err, row.want)
			if err != nil {
				assert.True(t, strings.HasPrefix(err.Error(), "zkrecipes: "), err.Error())
			}
		})
	}
}

func TestLeaseExpiredMatchesLockLost(t *testing.T) {
	err := lost(ErrLeaseExpired)
	assert.ErrorIs(t, err, ErrLockLost)
	assert.ErrorIs(t, err, ErrLeaseExpired)
	assert.NotErrorIs(t, err, ErrReleased)
	assert.Equal(t, "zkrecipes: ownership lost: lease time expired", err.Error())
}

func TestRevocableNodeHoldsNoDataUnlessSet(t *testing.T) {
	c, err := buildLockConfig([]LockOption{WithRevocable(true)})
	assert.NoError(t, err)
	assert.Equal(t, []byte{}, c.data(), "as Curator's revocable locks")
	c, err = buildLockConfig([]LockOption{WithRevocable(true), WithNodeData([]byte("me"))})
	assert.NoError(t, err)
	assert.Equal(t, []byte("me"), c.data())
}
