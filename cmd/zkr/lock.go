package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/zkrecipes/zkrecipes"
)

const lockHelp = `usage: zkr lock PATH [flags] -- CMD [ARGS...]
       zkr lock -n N PATH [flags] -- CMD [ARGS...]

Runs CMD while holding the lock on PATH (a Curator InterProcessMutex, or with
-n N an InterProcessSemaphoreV2 of N permits), then releases it and exits with
CMD's status. CMD sees ZKR_LOCK_PATH and ZKR_FENCING_TOKEN. If the lock is
lost while CMD runs, CMD's process group gets SIGTERM, then SIGKILL after
--grace, and zkr exits 74. Ctrl-C is forwarded to CMD; the lock is released
when CMD exits. Exit 73 when --wait elapses first, 69 on a ZooKeeper error.

flags:
`

// locker is what zkr lock acquires: a Mutex, or a Semaphore permit.
type locker func(ctx context.Context) (*zkrecipes.Lease, error)

func cmdLock(args []string) int {
	fs := newFlagSet("zkr lock", lockHelp)
	var c common
	c.register(fs)
	n := fs.Int("n", 1, "semaphore permits: up to N commands run at once (1: a mutex)")
	wait := fs.Duration("wait", 0, "exit 73 if the lock is not acquired within this long (0: wait forever)")
	grace := fs.Duration("grace", 10*time.Second, "after SIGTERM on lock loss, SIGKILL the command after this long")
	loseOn := fs.String("lose-on", "suspended", "when the lock counts as lost: suspended (connection lost; the safe default) or lost (session expired)")
	data := fs.String("data", "", "node data shown to operators (default: this host's address, as Curator writes)")
	pos, argv, code, ok := parseOrExit(fs, args)
	if !ok {
		return code
	}
	switch {
	case len(pos) != 1:
		return usageErr(fs.Name(), "want exactly one PATH, got %d", len(pos))
	case len(argv) == 0 || argv[0] == "":
		return usageErr(fs.Name(), "missing -- CMD")
	case c.servers == "":
		return usageErr(fs.Name(), "no servers: use --servers or set ZK_SERVERS")
	case *n < 1:
		return usageErr(fs.Name(), "-n must be at least 1")
	case *grace <= 0 || *wait < 0:
		return usageErr(fs.Name(), "--grace must be positive and --wait not negative")
	}
	policy, err := lossPolicy(*loseOn)
	if err != nil {
		return usageErr(fs.Name(), "%v", err)
	}
	path := pos[0]

	w, err := c.startWaiting(policy)
	defer w.close()
	if err != nil {
		return zkErr(fs.Name(), err)
	}
	ctx, cancel, sigs := w.ctx, w.cancel, w.sigs

	acquire := newLocker(w.s, path, *n, *data)
	actx, acancel := ctx, context.CancelFunc(func() {})
	if *wait > 0 {
		actx, acancel = context.WithTimeout(ctx, *wait)
	}
	defer acancel()
	lease, err := interruptible(actx, cancel, sigs, acquire)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		fmt.Fprintf(os.Stderr, "zkr lock: %s not acquired within %v\n", path, *wait)
		return exitNotAcquired
	case err != nil:
		return zkErr(fs.Name(), err)
	}
	code = runChild(argv, path, lease, sigs, *grace)
	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer rcancel()
	if err := lease.Release(rctx); err != nil && code != exitLost {
		fmt.Fprintf(os.Stderr, "zkr lock: release: %v\n", err)
	}
	return code
}

// newLocker returns the acquisition: a Mutex, or with n > 1 one lease of
// a Semaphore of n.
func newLocker(s *zkrecipes.Session, path string, n int, data string) locker {
	if n == 1 {
		var opts []zkrecipes.LockOption
		if data != "" {
			opts = append(opts, zkrecipes.WithNodeData([]byte(data)))
		}
		return zkrecipes.NewMutex(s, path, opts...).Acquire
	}
	var opts []zkrecipes.SemaphoreOption
	if data != "" {
		opts = append(opts, zkrecipes.WithNodeData([]byte(data)))
	}
	sem := zkrecipes.NewSemaphore(s, path, n, opts...)
	return func(ctx context.Context) (*zkrecipes.Lease, error) {
		leases, err := sem.Acquire(ctx, 1)
		if err != nil {
			return nil, err
		}
		return leases[0], nil
	}
}

func lossPolicy(v string) (zkrecipes.LossPolicy, error) {
	switch v {
	case "suspended":
		return zkrecipes.LoseOnSuspended, nil
	case "lost":
		return zkrecipes.LoseOnLost, nil
	}
	return 0, fmt.Errorf("--lose-on %q: want suspended or lost", v)
}

// interruptible runs fn with ctx, cancelling it when a signal arrives; an
// interrupted call returns context.Canceled.
func interruptible[T any](ctx context.Context, cancel context.CancelFunc, sigs <-chan os.Signal, fn func(context.Context) (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	rc := make(chan result, 1)
	go func() {
		v, err := fn(ctx)
		rc <- result{v, err}
	}()
	select {
	case r := <-rc:
		return r.v, r.err
	case s := <-sigs:
		fmt.Fprintf(os.Stderr, "zkr: %v: giving up\n", s)
		cancel()
		r := <-rc
		var zero T
		if r.err == nil {
			if c, ok := any(r.v).(interface{ Close() error }); ok {
				_ = c.Close()
			}
			if l, ok := any(r.v).(*zkrecipes.Lease); ok {
				rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
				_ = l.Release(rctx)
				rcancel()
			}
		}
		return zero, context.Canceled
	}
}
