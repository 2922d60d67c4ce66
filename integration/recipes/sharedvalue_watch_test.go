package recipes_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
)

// TestSharedValueWatch_NeverGoesBackInTimeWhenTheNodeIsDeleted: a Watch of
// a SharedValue or a SharedCount whose node another client deletes never
// hands its callback a version older than one it already got (a node
// created anew starts again at version 0): it returns ErrValueDeleted,
// and does not create the node again itself. In half of the rounds another
// client creates the node again at once (a Get creates it with the seed),
// racing the watch's read after the deletion.
func TestSharedValueWatch_NeverGoesBackInTimeWhenTheNodeIsDeleted(t *testing.T) {
	t.Parallel()
	c := server(t)
	s := connect(t, c, nil)
	other := connect(t, c, nil)
	obs := raw(t, c)
	base := testPath(t)
	const rounds = 20
	for i := range rounds {
		path := fmt.Sprintf("%s/v%d", base, i)
		recreate := i%2 == 1
		round := fmt.Sprintf("round %d (count %v, created again at once %v)", i, i%4 < 2, recreate)

		var mu sync.Mutex
		var seen []int32
		got := func(version int32) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, version)
		}
		last := func() int32 {
			mu.Lock()
			defer mu.Unlock()
			if len(seen) == 0 {
				return -1
			}
			return seen[len(seen)-1]
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		done := make(chan error, 1)
		var set func(n int) error
		var recreateNode func() error
		if i%4 < 2 {
			sc := zr.NewSharedCount(s.Session, path, 7)
			go func() { done <- sc.Watch(ctx, func(v zr.VersionedCount) { got(v.Version) }) }()
			set = func(n int) error { _, err := sc.Set(ctx, int32(n)); return err }
			recreateNode = func() error { _, err := zr.NewSharedCount(other.Session, path, 7).Get(ctx); return err }
		} else {
			sv := zr.NewSharedValue(s.Session, path, []byte("seed"))
			go func() { done <- sv.Watch(ctx, func(v zr.VersionedValue) { got(v.Version) }) }()
			set = func(n int) error { _, err := sv.Set(ctx, []byte(fmt.Sprint(n))); return err }
			recreateNode = func() error { _, err := zr.NewSharedValue(other.Session, path, []byte("seed")).Get(ctx); return err }
		}
		require.Eventually(t, func() bool { return last() == 0 }, 10*time.Second, 5*time.Millisecond, "%s: first value", round)
		for n := 1; n <= 3; n++ {
			require.NoError(t, set(n), round)
		}
		require.Eventually(t, func() bool { return last() == 3 }, 10*time.Second, 5*time.Millisecond, "%s: version 3", round)

		require.NoError(t, obs.Delete(path, -1), round)
		if recreate {
			require.NoError(t, recreateNode(), round)
		}
		var err error
		select {
		case err = <-done:
		case <-time.After(10 * time.Second):
		}
		cancel()
		mu.Lock()
		versions := append([]int32(nil), seen...)
		mu.Unlock()
		for k := 1; k < len(versions); k++ {
			require.GreaterOrEqual(t, versions[k], versions[k-1], "%s: the watch went back in time: versions %v", round, versions)
		}
		require.ErrorIs(t, err, zr.ErrValueDeleted, "%s: Watch's return once the node was deleted (versions %v)", round, versions)
		if !recreate {
			exists, _, err := obs.Exists(path)
			require.NoError(t, err)
			require.False(t, exists, "%s: the watch created the deleted node again", round)
		}
	}
}
