//go:build go1.25

package zkrecipes

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fn's ctx carries the lease's loss as its cause even when runTerm sees
// Done close before the lease's hooks have run: signal.fire closes done
// first, and a cancel from runTerm in between would make the cause
// context.Canceled.
func TestRunTermGivesFnTheLossAsCauseWhateverTheOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sig := newSignal()
		l := &Lease{h: &hold{sig: sig}}
		cause := make(chan error, 1)
		lostc := make(chan error, 1)
		go func() {
			_, lost := runTerm(context.Background(), l, func(fctx context.Context, _ *Lease) error {
				<-fctx.Done()
				cause <- context.Cause(fctx)
				return nil
			})
			lostc <- lost
		}()
		synctest.Wait() // fn waits on its ctx, runTerm on the lease

		// The first half of sig.fire: done closes, the hooks have not run.
		loss := lost(ErrNodeDeleted)
		sig.mu.Lock()
		sig.err = loss
		close(sig.done)
		hooks := sig.hooks
		sig.hooks = nil
		sig.mu.Unlock()
		synctest.Wait() // runTerm has seen Done close, and done all it does before fn returns
		select {
		case c := <-cause:
			require.Failf(t, "fn's ctx ended before the lease's hook ran", "cause %v", c)
		default:
		}

		for _, f := range hooks { // the second half
			f()
		}
		c := <-cause
		assert.ErrorIs(t, c, ErrLockLost)
		assert.ErrorIs(t, c, ErrNodeDeleted)
		assert.ErrorIs(t, <-lostc, ErrNodeDeleted)
	})
}
