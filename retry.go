package zkrecipes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"
)

// BackOff paces retries: NextBackOff returns how long to wait before the
// next attempt, or Stop to give up; Reset starts over. Any
// github.com/cenkalti/backoff/v4 BackOff satisfies it.
type BackOff interface {
	NextBackOff() time.Duration
	Reset()
}

// Stop is returned by BackOff.NextBackOff to end retrying.
const Stop time.Duration = -1

// RetryPolicy makes a fresh BackOff for each operation that retries. It
// must be safe to call from several goroutines. The constructors below
// refuse impossible arguments (a zero or negative duration or count):
// WithRetryPolicy then fails with ErrInvalidArgument.
type RetryPolicy func() BackOff

// ExponentialBackoff retries with exponentially growing, jittered waits
// from initial up to max between attempts, forever (until the caller's ctx
// ends). It is the default policy: initial 50ms, max 5s.
func ExponentialBackoff(initial, max time.Duration) RetryPolicy {
	if initial <= 0 || max < initial {
		return invalidPolicy("ExponentialBackoff(%v, %v): want 0 < initial <= max", initial, max)
	}
	return func() BackOff {
		b := backoff.NewExponentialBackOff()
		b.InitialInterval, b.MaxInterval, b.MaxElapsedTime = initial, max, 0
		b.RandomizationFactor = 0.5
		b.Reset()
		return b
	}
}

// BoundedExponentialBackoff is ExponentialBackoff that gives up once
// maxElapsed has passed since the first failure.
func BoundedExponentialBackoff(initial, max, maxElapsed time.Duration) RetryPolicy {
	if initial <= 0 || max < initial || maxElapsed <= 0 {
		return invalidPolicy("BoundedExponentialBackoff(%v, %v, %v): want 0 < initial <= max and maxElapsed > 0", initial, max, maxElapsed)
	}
	return func() BackOff {
		b := backoff.NewExponentialBackOff()
		b.InitialInterval, b.MaxInterval, b.MaxElapsedTime = initial, max, maxElapsed
		b.RandomizationFactor = 0.5
		b.Reset()
		return b
	}
}

// RetryNTimes retries at most n times, waiting interval between attempts.
func RetryNTimes(n int, interval time.Duration) RetryPolicy {
	if n < 0 || interval <= 0 {
		return invalidPolicy("RetryNTimes(%d, %v): want n >= 0 and interval > 0", n, interval)
	}
	return func() BackOff {
		return backoff.WithMaxRetries(backoff.NewConstantBackOff(interval), uint64(max(n, 0)))
	}
}

// RetryUntilElapsed retries every interval until total has passed since the
// first failure.
func RetryUntilElapsed(total, interval time.Duration) RetryPolicy {
	if total <= 0 || interval <= 0 {
		return invalidPolicy("RetryUntilElapsed(%v, %v): want positive durations", total, interval)
	}
	return func() BackOff { return &untilElapsed{total: total, interval: interval} }
}

// RetryForever retries every interval until the caller's ctx ends.
func RetryForever(interval time.Duration) RetryPolicy {
	if interval <= 0 {
		return invalidPolicy("RetryForever(%v): want a positive interval", interval)
	}
	return func() BackOff { return backoff.NewConstantBackOff(interval) }
}

// NoRetry never retries: the first failure is returned.
func NoRetry() RetryPolicy {
	return func() BackOff { return &backoff.StopBackOff{} }
}

type untilElapsed struct {
	total, interval time.Duration
	start           time.Time
}

func (u *untilElapsed) NextBackOff() time.Duration {
	if u.start.IsZero() {
		u.start = time.Now()
	}
	if time.Since(u.start)+u.interval > u.total {
		return Stop
	}
	return u.interval
}

func (u *untilElapsed) Reset() { u.start = time.Time{} }

// badPolicy is what a policy constructor given impossible arguments
// returns: WithRetryPolicy reports its error.
type badPolicy struct{ err error }

func (badPolicy) NextBackOff() time.Duration { return Stop }
func (badPolicy) Reset()                     {}

func invalidPolicy(format string, args ...any) RetryPolicy {
	b := badPolicy{invalidArg(format, args...)}
	return func() BackOff { return b }
}

// validatePolicy makes one BackOff of p (a policy is a factory: this has no
// effect) to refuse nil and the policies built from impossible arguments.
func validatePolicy(p RetryPolicy) error {
	if p == nil {
		return invalidArg("nil retry policy")
	}
	switch b := p().(type) {
	case nil:
		return invalidArg("retry policy returned a nil BackOff")
	case badPolicy:
		return b.err
	}
	return nil
}

// connLost turns the error of a request that could not be written (a
// reset, a broken pipe, a write deadline: go-zookeeper hands it the write's
// own error) into what it means: zk.ErrConnectionClosed, the request may or
// may not have reached the server. Other errors, a context's deadline
// included, pass through.
func connLost(err error) error {
	if err == nil || errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return &connLostError{cause: err}
	}
	return err
}

// isRetryable tells whether a request may succeed when sent again on the
// same session: after a lost connection or no reachable server, not after
// an expiry (what was tied to the session must be redone knowingly).
func isRetryable(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionMoved)
}

// pace waits before the next try of a loop that outlasts the retry
// policy (a clean-up that must happen, a read a caller waits on until its
// ctx ends): the policy's next wait, or a second once it has given up.
func pace(ctx context.Context, bo BackOff) error {
	d := bo.NextBackOff()
	if d == Stop {
		d = time.Second
	}
	return sleepCtx(ctx, d)
}

// sleepCtx waits d or until ctx ends, whichever is first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// retryStartOver runs attempt until it ends other than in a startOver,
// backing off between attempts under the Session's retry policy. When
// ctx ends the wait, the error names it: name of what (see waitFailed).
func retryStartOver[T any](ctx context.Context, s *Session, what, name string, attempt func() (T, error)) (_ T, err error) {
	defer func() { err = s.waitFailed(ctx, name+" of "+what, err) }()
	bo := s.cfg.retry()
	for {
		v, err := attempt()
		if err == nil || !errors.Is(err, errStartOver) {
			return v, err
		}
		s.cfg.log.Info("zkrecipes: "+name+" starts over", "path", what, "err", err)
		if err := backOff(ctx, bo, what, errors.Unwrap(err)); err != nil {
			var zero T
			return zero, err
		}
	}
}

// backOff waits bo's next delay before another try of what, which failed
// with err: it returns ctx's error when ctx ends first, and an error
// matching ErrRetriesExhausted and err when bo gives up.
func backOff(ctx context.Context, bo BackOff, what string, err error) error {
	d := bo.NextBackOff()
	if d == Stop {
		if what == "" {
			return fmt.Errorf("%w: %w", ErrRetriesExhausted, err)
		}
		return fmt.Errorf("%w: %s: %w", ErrRetriesExhausted, what, err)
	}
	return sleepCtx(ctx, d)
}
