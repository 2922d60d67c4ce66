package zkrecipes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
)

// Any backoff.BackOff can serve as a policy.
var _ BackOff = backoff.NewExponentialBackOff()

func TestRetryNTimesStopsAfterN(t *testing.T) {
	b := RetryNTimes(3, 10*time.Millisecond)()
	for i := 0; i < 3; i++ {
		assert.Equal(t, 10*time.Millisecond, b.NextBackOff())
	}
	assert.Equal(t, Stop, b.NextBackOff())
}

func TestNoRetryStopsAtOnce(t *testing.T) {
	assert.Equal(t, Stop, NoRetry()().NextBackOff())
}

func TestExponentialBackoffGrowsWithinBounds(t *testing.T) {
	b := ExponentialBackoff(10*time.Millisecond, 80*time.Millisecond)()
	var last time.Duration
	for i := 0; i < 20; i++ {
		d := b.NextBackOff()
		assert.Greater(t, d, time.Duration(0))
		assert.LessOrEqual(t, d, 120*time.Millisecond, "max plus jitter")
		last = d
	}
	assert.GreaterOrEqual(t, last, 40*time.Millisecond, "reaches the cap region")
}

func TestBoundedExponentialBackoffGivesUp(t *testing.T) {
	b := BoundedExponentialBackoff(time.Millisecond, time.Millisecond, 20*time.Millisecond)()
	deadline := time.Now().Add(5 * time.Second)
	for b.NextBackOff() != Stop {
		if time.Now().After(deadline) {
			t.Fatal("never gave up")
		}
		time.Sleep(time.Millisecond) // let elapsed time pass; this orders nothing
	}
}

func TestRetryUntilElapsedGivesUp(t *testing.T) {
	b := RetryUntilElapsed(30*time.Millisecond, 10*time.Millisecond)()
	assert.Equal(t, 10*time.Millisecond, b.NextBackOff())
	deadline := time.Now().Add(5 * time.Second)
	for b.NextBackOff() != Stop {
		if time.Now().After(deadline) {
			t.Fatal("never gave up")
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.Reset()
	assert.Equal(t, 10*time.Millisecond, b.NextBackOff(), "Reset starts over")
}

func TestRetryForeverNeverStops(t *testing.T) {
	b := RetryForever(time.Millisecond)()
	for i := 0; i < 1000; i++ {
		assert.Equal(t, time.Millisecond, b.NextBackOff())
	}
}

func TestErrorClassification(t *testing.T) {
	for _, err := range []error{zk.ErrConnectionClosed, zk.ErrNoServer, fmt.Errorf("wrapped: %w", zk.ErrConnectionClosed)} {
		assert.True(t, isRetryable(err), err.Error())
	}
	for _, err := range []error{zk.ErrSessionExpired, zk.ErrNoNode, zk.ErrNodeExists, zk.ErrBadArguments, zk.ErrNoAuth, zk.ErrInvalidACL, errors.New("other")} {
		assert.False(t, isRetryable(err), err.Error())
	}
}

func TestSleepCtxHonoursCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, sleepCtx(ctx, time.Hour), context.Canceled)
	assert.NoError(t, sleepCtx(context.Background(), time.Millisecond))
}

// go-zookeeper hands a request whose frame could not be written the
// write's own error; the Session takes it for a lost connection, which is
// retried, and keeps the cause for whoever reads the message.
func TestConnLost_TakesAFailedWriteForALostConnection(t *testing.T) {
	for _, cause := range []error{
		&net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)},
		&net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.ECONNRESET)},
		&net.OpError{Op: "write", Net: "tcp", Err: os.ErrDeadlineExceeded},
		&net.OpError{Op: "write", Net: "tcp", Err: net.ErrClosed},
		io.EOF,
		fmt.Errorf("wrapped: %w", syscall.ECONNRESET),
	} {
		err := connLost(cause)
		assert.ErrorIs(t, err, zk.ErrConnectionClosed, "%v", cause)
		assert.ErrorIs(t, err, cause)
		assert.True(t, isRetryable(err), "%v", cause)
		assert.Contains(t, err.Error(), cause.Error())
	}
	for _, other := range []error{nil, zk.ErrConnectionClosed, zk.ErrNoNode, zk.ErrNodeExists, zk.ErrSessionExpired, zk.ErrShortBuffer, zk.ErrNoAuth,
		context.DeadlineExceeded, context.Canceled} {
		assert.Equal(t, other, connLost(other), "%v is returned as it is", other)
	}
}
