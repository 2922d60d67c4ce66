package zkrecipes

import (
	"context"
	"errors"
	"fmt"
)

// RunOption configures Election.Run.
type RunOption func(*runConfig)

type runConfig struct {
	requeue        bool
	requeueOnError bool
}

// WithRequeue sets whether Run campaigns again after leadership ends (lost,
// resigned, or fn returned nil), like Curator's LeaderSelector.autoRequeue.
// With the Session's WithFlapDamping, a campaign after a suspension waits
// for the connection to settle (see Campaign). Default false: Run returns
// after one term.
func WithRequeue(enabled bool) RunOption {
	return func(c *runConfig) { c.requeue = enabled }
}

// WithRequeueOnError sets whether Run campaigns again when fn returns an
// error, instead of returning it. The error is logged at Warn on the
// Session's logger and is not returned; with WithRequeue(false) Run still
// returns after a term whose fn returned nil. Before campaigning again
// Run waits as the Session's retry policy says (WithRetryPolicy; by
// default 50ms growing to 5s over consecutive failed terms, starting over
// after a term that did not fail), and returns ctx's error if ctx ends
// meanwhile; once the policy gives up, Run returns fn's last error
// wrapped in ErrRetriesExhausted. Default false: an error returned by fn
// ends Run, whatever WithRequeue says.
func WithRequeueOnError(enabled bool) RunOption {
	return func(c *runConfig) { c.requeueOnError = enabled }
}

// Run campaigns and, once this participant leads, runs fn while it leads:
// fn's ctx is cancelled the moment leadership is lost or in doubt (from
// SUSPENDED on under the default LoseOnSuspended policy, on expiry, on the
// deletion of the participant's node, when a check after RECONNECTED fails,
// or when Resign is called), and fn must then return promptly, because
// another participant may already lead. fn receives the Lease: its Token is
// the leadership epoch to hand to every resource fn writes.
//
// When fn returns, Run resigns (deleting the participant's node). It then
// returns fn's error if there is one; otherwise, with WithRequeue, it
// campaigns again, and without it returns nil. When leadership is lost
// while fn runs, what fn returns is ignored: with WithRequeue Run
// campaigns again, without it Run returns the loss (an error matching
// ErrLockLost and its cause). context.Cause of fn's ctx says why it was
// cancelled: the lease's Err (matching ErrLockLost and its cause, or
// ErrReleased after Resign), or the cause of Run's ctx. By default an error
// returned by fn ends Run even with WithRequeue(true); with
// WithRequeueOnError(true) Run logs it and, after the wait that option
// states, campaigns again. Run returns ctx's error when ctx ends,
// after cancelling fn's ctx and waiting for fn, and Campaign's error when a
// campaign fails. Leadership never outlives Run.
func (e *Election) Run(ctx context.Context, fn func(ctx context.Context, lease *Lease) error, opts ...RunOption) error {
	if e.err != nil {
		return e.err
	}
	if ctx == nil || fn == nil {
		return invalidArg("nil context or function")
	}
	var cfg runConfig
	for _, o := range opts {
		if o == nil {
			return invalidArg("nil RunOption")
		}
		o(&cfg)
	}
	var bo BackOff // paces failed terms; nil until one fails, and after a term that did not
	for {
		l, err := e.Campaign(ctx)
		if err != nil {
			return err
		}
		ferr, lostErr := runTerm(ctx, l, fn)
		e.abandon(l)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case lostErr != nil && !cfg.requeue:
			return lostErr
		case lostErr != nil:
			e.s.cfg.log.Info("zkrecipes: leadership lost; campaigning again", "path", e.q.dir, "err", lostErr)
		case ferr != nil && !cfg.requeueOnError:
			return ferr
		case ferr != nil:
			if bo == nil {
				bo = e.s.cfg.retry()
			}
			d := bo.NextBackOff()
			if d == Stop {
				return fmt.Errorf("%w: leader's function at %s: %w", ErrRetriesExhausted, e.s.rel(e.q.dir), ferr)
			}
			e.s.cfg.log.Warn("zkrecipes: leader's function failed; campaigning again", "path", e.q.dir, "err", ferr, "wait", d)
			if err := sleepCtx(ctx, d); err != nil {
				return err
			}
			continue
		case !cfg.requeue:
			return nil
		}
		bo = nil
	}
}

// runTerm runs fn for one term of leadership. It returns fn's error, or,
// when leadership ended before fn returned, the loss (nil after a
// Resign).
func runTerm(ctx context.Context, l *Lease, fn func(context.Context, *Lease) error) (ferr, lostErr error) {
	// fctx ends with the lease (the lease's hook cancels it with the
	// lease's Err) or with ctx (which cancels it with ctx's cause). Done
	// closes before either has cancelled fctx: cancelling it here would
	// race them and could give fn context.Canceled as the cause.
	fctx, cancel := l.Context(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- fn(fctx, l) }()
	select {
	case ferr = <-done:
		return ferr, nil
	case <-l.Done():
		<-done
		if err := l.Err(); !errors.Is(err, ErrReleased) {
			return nil, err
		}
		return nil, nil
	case <-ctx.Done():
		return <-done, nil
	}
}
