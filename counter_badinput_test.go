package zkrecipes

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// counterMethods runs every method of the shared values and counters made
// on s and path with opts.
func counterMethods(s *Session, path string, opts ...CounterOption) map[string]func(context.Context) error {
	v := NewSharedValue(s, path, []byte("seed"))
	c := NewSharedCount(s, path, 1)
	a := NewAtomicCounter(s, path, opts...)
	return map[string]func(context.Context) error{
		"SharedValue.Get":    func(ctx context.Context) error { _, err := v.Get(ctx); return err },
		"SharedValue.Set":    func(ctx context.Context) error { _, err := v.Set(ctx, nil); return err },
		"SharedValue.TrySet": func(ctx context.Context) error { _, err := v.TrySet(ctx, nil, 0); return err },
		"SharedValue.Watch":  func(ctx context.Context) error { return v.Watch(ctx, func(VersionedValue) {}) },
		"SharedCount.Get":    func(ctx context.Context) error { _, err := c.Get(ctx); return err },
		"SharedCount.Set":    func(ctx context.Context) error { _, err := c.Set(ctx, 1); return err },
		"SharedCount.TrySet": func(ctx context.Context) error { _, err := c.TrySet(ctx, 1, 0); return err },
		"SharedCount.Watch":  func(ctx context.Context) error { return c.Watch(ctx, func(VersionedCount) {}) },
		"AtomicCounter.Get":  func(ctx context.Context) error { _, err := a.Get(ctx); return err },
		"AtomicCounter.Add":  func(ctx context.Context) error { _, err := a.Add(ctx, 1); return err },
		"AtomicCounter.Set":  func(ctx context.Context) error { _, err := a.Set(ctx, 1); return err },
		"AtomicCounter.CompareAndSet": func(ctx context.Context) error {
			_, err := a.CompareAndSet(ctx, 1, 2)
			return err
		},
	}
}

func TestCountersRefuseBadInputBeforeAnyCall(t *testing.T) {
	unused := &Session{} // never reached: validation comes first
	ctx := context.Background()
	check := func(name string, f func(context.Context) error, want error) {
		t.Helper()
		err := f(ctx)
		if assert.ErrorIs(t, err, want, name) {
			assert.True(t, strings.HasPrefix(err.Error(), "zkrecipes: "), "%s: %v", name, err)
		}
	}
	for pname, p := range badPaths {
		for m, f := range counterMethods(unused, p) {
			check(m+" on "+pname+" path", f, ErrInvalidPath)
		}
	}
	for m, f := range counterMethods(nil, "/a") {
		check(m+" on a nil session", f, ErrNilSession)
	}
	for name, opt := range map[string]CounterOption{
		"nil option":         nil,
		"nil retry policy":   WithOptimisticRetry(nil),
		"bad retry policy":   WithOptimisticRetry(RetryNTimes(-1, 0)),
		"relative lock path": WithPromotedLock("lock"),
		"lock on itself":     WithPromotedLock("/a"),
	} {
		a := NewAtomicCounter(unused, "/a", opt)
		_, err := a.Increment(ctx)
		want := ErrInvalidArgument
		if name == "relative lock path" {
			want = ErrInvalidPath
		}
		check("AtomicCounter with "+name, func(context.Context) error { return err }, want)
	}
	s := &Session{}
	check("SharedCount.Watch(nil fn)", func(ctx context.Context) error { return NewSharedCount(s, "/a", 1).Watch(ctx, nil) }, ErrInvalidArgument)
	check("SharedValue.Watch(nil fn)", func(ctx context.Context) error { return NewSharedValue(s, "/a", nil).Watch(ctx, nil) }, ErrInvalidArgument)
	check("SharedValue.TrySet(version -1)", func(ctx context.Context) error {
		_, err := NewSharedValue(s, "/a", nil).TrySet(ctx, nil, -1)
		return err
	}, ErrInvalidArgument)
	check("SharedValue.Set(2 MB)", func(ctx context.Context) error {
		_, err := NewSharedValue(s, "/a", nil).Set(ctx, make([]byte, 2<<20))
		return err
	}, ErrDataTooLarge)
	check("NewSharedValue(2 MB seed)", func(ctx context.Context) error {
		_, err := NewSharedValue(s, "/a", make([]byte, 2<<20)).Get(ctx)
		return err
	}, ErrDataTooLarge)
	//lint:ignore SA1012 a nil context is the misuse under test
	check("SharedCount.Watch(nil ctx)", func(context.Context) error { return NewSharedCount(s, "/a", 1).Watch(nil, func(VersionedCount) {}) }, ErrInvalidArgument)
	//lint:ignore SA1012 a nil context is the misuse under test
	check("AtomicCounter.Add(nil ctx)", func(context.Context) error { _, err := NewAtomicCounter(s, "/a").Add(nil, 1); return err }, ErrInvalidArgument)
}

func TestCountCodecsAreCuratorsFormats(t *testing.T) {
	assert.Equal(t, []byte{0xff, 0xff, 0xff, 0xfe}, encodeCount(-2))
	n, err := decodeCount("/c", []byte{0, 0, 1, 0})
	assert.NoError(t, err)
	assert.Equal(t, int32(256), n)
	for _, bad := range [][]byte{nil, {1}, {0, 0, 0, 0, 0}} {
		_, err := decodeCount("/c", bad)
		assert.ErrorIs(t, err, ErrBadCount)
	}
	for data, want := range map[string]int64{"": 0, "\x00\x00\x00\x00\x00\x00\x01\x00": 256, "\xff\xff\xff\xff\xff\xff\xff\xff": -1} {
		v, err := decodeLong("/c", []byte(data))
		assert.NoError(t, err)
		assert.Equal(t, want, v)
	}
	for _, bad := range [][]byte{{1}, {0, 0, 0, 7}, make([]byte, 9)} {
		_, err := decodeLong("/c", bad)
		assert.ErrorIs(t, err, ErrBadAtomicLong)
	}
}
