package secure_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
)

// A Session lost for good (its credentials refused on reconnect) ends the
// persistent watches and the caches on it with its error: Events closes
// and Err matches ErrAuthFailed, a cache's Err too; a Start on the lost
// Session returns that error at once instead of waiting out its ctx. With
// the wire layer off (ZKRECIPES_WIRE=off) the caches run on one-shot
// watches and must end the same way.
func TestSASLPersistentWatchAndCachesEndWithTheSessionsErrorWhenRejectedOnReconnect(t *testing.T) {
	srv, s, ctx := aliceToBeRefused(t)
	w := zr.NewPersistentWatch(s, "/lw", zr.WithRecursive(true))
	err := w.Start(ctx)
	persistent := !errors.Is(err, zr.ErrPersistentWatchUnsupported) // the caches fall back to one-shot watches otherwise
	if persistent {
		require.NoError(t, err)
		defer func() { _ = w.Close(context.Background()) }()
	}
	tc := zr.NewTreeCache(s, "/lw")
	require.NoError(t, tc.Start(ctx))
	defer tc.Close(context.Background())
	nc := zr.NewNodeCache(s, "/lw")
	require.NoError(t, nc.Start(ctx))
	defer nc.Close(context.Background())

	refuseAlice(t, ctx, srv)

	ended := time.After(30 * time.Second)
	for open := persistent; open; {
		select {
		case ev, ok := <-w.Events():
			open = ok
			require.True(t, !ok || ev.Kind != zr.WatchReset, "no reset: the Session never connects again (%+v)", ev)
		case <-ended:
			t.Fatalf("Events still open after the Session was lost (Session: %v)", s.Err())
		}
	}
	require.Eventually(t, func() bool { return errors.Is(s.Err(), zr.ErrAuthFailed) }, 30*time.Second, 20*time.Millisecond)
	if persistent {
		require.ErrorIs(t, w.Err(), zr.ErrAuthFailed)
	}
	for name, c := range map[string]interface{ Err() error }{"TreeCache": tc, "NodeCache": nc} {
		require.Eventually(t, func() bool { return c.Err() != nil }, 30*time.Second, 20*time.Millisecond, name)
		require.ErrorIs(t, c.Err(), zr.ErrAuthFailed, name)
	}

	// Started on the lost Session: its error, at once.
	sctx, scancel := context.WithTimeout(ctx, 20*time.Second)
	defer scancel()
	for name, start := range map[string]func(context.Context) error{
		"PersistentWatch": zr.NewPersistentWatch(s, "/lw2").Start,
		"TreeCache":       zr.NewTreeCache(s, "/lw2").Start,
		"NodeCache":       zr.NewNodeCache(s, "/lw2").Start,
	} {
		begin := time.Now()
		err := start(sctx)
		if name == "PersistentWatch" && !persistent {
			require.ErrorIs(t, err, zr.ErrPersistentWatchUnsupported)
			continue
		}
		require.ErrorIs(t, err, zr.ErrAuthFailed, name)
		require.Less(t, time.Since(begin), 5*time.Second, name)
	}
}
