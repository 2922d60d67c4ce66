package zkrecipes

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 42, defect 1: fn's ctx carries the lease's loss as its cause.
func TestZKElectionRunGivesFnTheLossAsCause(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	other := zkRaw(t)
	dir := "/zkt/run-cause-" + newUUID()
	e := NewElection(s, dir)
	leading := make(chan string, 1)
	cause := make(chan error, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- e.Run(ctx, func(fctx context.Context, l *Lease) error {
			leading <- l.Path()
			<-fctx.Done()
			cause <- context.Cause(fctx)
			return nil
		})
	}()
	var node string
	select {
	case node = <-leading:
	case <-ctx.Done():
		require.FailNow(t, "never led")
	}
	require.NoError(t, other.Delete(node, -1), "an operator deletes the leader's node")
	select {
	case c := <-cause:
		assert.ErrorIs(t, c, ErrLockLost)
		assert.ErrorIs(t, c, ErrNodeDeleted)
	case <-ctx.Done():
		require.FailNow(t, "fn's ctx never ended")
	}
	err := <-errc
	assert.ErrorIs(t, err, ErrNodeDeleted, "without WithRequeue, Run returns the loss")
}

// Issue 42, defect 1: by default fn's error ends Run even with
// WithRequeue(true); WithRequeueOnError(true) campaigns again instead.
func TestZKElectionRunRequeuesOnErrorOnlyWhenAsked(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	boom := errors.New("transient")

	e := NewElection(s, "/zkt/run-err-"+newUUID())
	calls := 0
	err := e.Run(ctx, func(context.Context, *Lease) error { calls++; return boom }, WithRequeue(true))
	assert.ErrorIs(t, err, boom, "by default fn's error ends Run")
	assert.Equal(t, 1, calls)

	e = NewElection(s, "/zkt/run-err-"+newUUID())
	calls = 0
	err = e.Run(ctx, func(context.Context, *Lease) error {
		calls++
		if calls == 1 {
			return boom
		}
		return nil
	}, WithRequeueOnError(true))
	assert.NoError(t, err, "the failed term is followed by another, whose nil ends Run")
	assert.Equal(t, 2, calls)
}

// WithRequeueOnError waits between failed terms as the Session's retry
// policy says, and returns fn's error once the policy gives up.
func TestZKElectionRunWaitsBetweenFailedTerms(t *testing.T) {
	const wait = 300 * time.Millisecond
	ctx, s := zkSession(t, 30*time.Second, WithRetryPolicy(RetryForever(wait)))
	boom := errors.New("transient")
	e := NewElection(s, "/zkt/run-wait-"+newUUID())
	var starts, ends []time.Time
	err := e.Run(ctx, func(context.Context, *Lease) error {
		starts = append(starts, time.Now())
		defer func() { ends = append(ends, time.Now()) }()
		if len(starts) < 3 {
			return boom
		}
		return nil
	}, WithRequeueOnError(true))
	require.NoError(t, err)
	require.Len(t, starts, 3)
	for i := 1; i < 3; i++ {
		assert.GreaterOrEqual(t, starts[i].Sub(ends[i-1]), wait, "term %d starts a wait after the failed one", i+1)
	}

	_, s = zkSession(t, 30*time.Second, WithRetryPolicy(NoRetry()))
	calls := 0
	err = NewElection(s, "/zkt/run-wait-"+newUUID()).Run(ctx, func(context.Context, *Lease) error {
		calls++
		return boom
	}, WithRequeueOnError(true))
	assert.ErrorIs(t, err, ErrRetriesExhausted)
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, 1, calls, "NoRetry: no second term")
}
