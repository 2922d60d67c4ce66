package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/zkrecipes/zkrecipes"
)

const barrierHelp = `usage: zkr barrier set|remove|wait PATH [flags]

A Curator DistributedBarrier on PATH: the barrier is set while the node PATH
exists. set creates it (no error if it exists), remove deletes it, releasing
every waiter (no error if it is gone), and wait blocks until it is gone,
through lost connections and session expiry. Exit 73 when --wait elapses
first, 130 on Ctrl-C, 69 on a ZooKeeper error.

flags:
`

func cmdBarrier(args []string) int {
	fs := newFlagSet("zkr barrier", barrierHelp)
	var c common
	c.register(fs)
	wait := fs.Duration("wait", 0, "wait: exit 73 if the barrier is still set after this long (0: wait forever)")
	pos, rest, code, ok := parseOrExit(fs, args)
	if !ok {
		return code
	}
	switch {
	case len(pos) != 2 || rest != nil:
		return usageErr(fs.Name(), "want set, remove or wait and one PATH")
	case pos[0] != "set" && pos[0] != "remove" && pos[0] != "wait":
		return usageErr(fs.Name(), "unknown action %q: want set, remove or wait", pos[0])
	case c.servers == "":
		return usageErr(fs.Name(), "no servers: use --servers or set ZK_SERVERS")
	case *wait < 0:
		return usageErr(fs.Name(), "--wait must not be negative")
	}
	action, path := pos[0], pos[1]

	w, err := c.startWaiting(zkrecipes.LoseOnLost)
	defer w.close()
	if err != nil {
		return zkErr(fs.Name(), err)
	}
	b := zkrecipes.NewBarrier(w.s, path)
	ctx, cancel := w.ctx, context.CancelFunc(func() {})
	if action == "wait" && *wait > 0 {
		ctx, cancel = context.WithTimeout(w.ctx, *wait)
	}
	defer cancel()
	_, err = interruptible(ctx, w.cancel, w.sigs, func(ctx context.Context) (struct{}, error) {
		switch action {
		case "set":
			return struct{}{}, b.Set(ctx)
		case "remove":
			return struct{}{}, b.Remove(ctx)
		}
		return struct{}{}, b.Wait(ctx)
	})
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		fmt.Fprintf(os.Stderr, "zkr barrier: %s still set after %v\n", path, *wait)
		return exitNotAcquired
	case err != nil:
		return zkErr(fs.Name(), err)
	}
	return 0
}
