package recipes_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// A write the server applied whose reply the Session's Close cut short
// may have been applied: it says so (ErrOutcomeUnknown, and ErrClosed as
// its cause), never a plain ErrClosed that reads as "not done".
func TestSharedValue_AWriteInFlightAtSessionCloseIsOutcomeUnknown(t *testing.T) {
	c := server(t)
	path := testPath(t) + "/value"
	for round := range 20 {
		proxy := zktest.NewProxy(t, c.Servers()[0])
		cl := connect(t, c, []string{proxy.Addr()}, zr.WithSessionTimeout(30*time.Second))
		v := zr.NewSharedValue(cl.Session, path, []byte("seed"))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		t.Cleanup(cancel)
		cur, err := v.Get(ctx)
		require.NoError(t, err, "round %d", round)
		f := proxy.HoldRequestReply(1) // the setData's: applied, its reply withheld
		done := make(chan error, 1)
		go func() {
			_, err := v.TrySet(ctx, []byte{byte(round)}, cur.Version)
			done <- err
		}()
		select {
		case <-f.Hit():
		case <-ctx.Done():
			t.Fatalf("round %d: the write's reply never came", round)
		}
		_ = cl.Close()
		select {
		case err = <-done:
		case <-ctx.Done():
			t.Fatalf("round %d: TrySet did not return after Close", round)
		}
		f.Release()
		require.ErrorIs(t, err, zr.ErrOutcomeUnknown, "round %d", round)
		require.ErrorIs(t, err, zr.ErrClosed, "round %d", round)
	}
}
