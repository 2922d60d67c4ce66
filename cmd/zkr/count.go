package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/zkrecipes/zkrecipes"
)

const countHelp = `usage: zkr count get|set|add PATH [N] [--long] [flags]

Reads or changes a shared counter, in Curator's formats:

  get PATH      print the value
  set PATH N    set the value to N, whatever it was
  add PATH N    add N (negative to subtract), atomically; print the new value

The node's format decides the type: 4 bytes is a SharedCount (a 32-bit
int), 8 bytes (or none) a DistributedAtomicLong (a 64-bit long). A missing
node is created as a SharedCount, or as a DistributedAtomicLong with
--long; get on a missing node fails. Curator's PromotedToLock is not used.

flags:
`

func cmdCount(args []string) int {
	fs := newFlagSet("zkr count", countHelp)
	var c common
	c.register(fs)
	long := fs.Bool("long", false, "create a missing node as a DistributedAtomicLong (8 bytes), not a SharedCount")
	// A negative N ("add PATH -3") is not a flag.
	var neg []string
	var rest []string
	for _, a := range args {
		if _, err := strconv.ParseInt(a, 10, 64); err == nil && len(a) > 1 && a[0] == '-' {
			neg = append(neg, a)
			continue
		}
		rest = append(rest, a)
	}
	pos, argv, code, ok := parseOrExit(fs, rest)
	if !ok {
		return code
	}
	pos = append(pos, neg...)
	if argv != nil || len(pos) < 2 {
		return usageErr(fs.Name(), "want get|set|add PATH [N]")
	}
	op, path := pos[0], pos[1]
	var n int64
	switch {
	case op == "get" && len(pos) == 2:
	case (op == "set" || op == "add") && len(pos) == 3:
		v, err := strconv.ParseInt(pos[2], 10, 64)
		if err != nil {
			return usageErr(fs.Name(), "N must be an integer: %q", pos[2])
		}
		n = v
	default:
		return usageErr(fs.Name(), "want get PATH, set PATH N or add PATH N")
	}
	ctx, s, done, code := c.request(fs.Name())
	if s == nil {
		return code
	}
	defer done()

	exists, isLong, err := countFormat(ctx, s, path)
	switch {
	case err != nil:
		return zkErr(fs.Name(), err)
	case !exists && op == "get":
		return zkErr(fs.Name(), fmt.Errorf("no counter at %s", path))
	case !exists:
		isLong = *long
	}
	var v int64
	if isLong {
		v, err = countLong(ctx, zkrecipes.NewAtomicCounter(s, path), op, n)
	} else {
		v, err = countShared(ctx, zkrecipes.NewSharedCount(s, path, 0), op, n, !exists)
	}
	if err != nil {
		return zkErr(fs.Name(), err)
	}
	fmt.Fprintln(os.Stdout, v)
	return 0
}

// countFormat reports whether the node at path exists and, if so,
// whether it is a DistributedAtomicLong: anything but the 4 bytes of a
// SharedCount, as the recipes tell (a Barrier is set while its node
// exists). A node deleted between the two reads is created again as a
// SharedCount of 0.
func countFormat(ctx context.Context, s *zkrecipes.Session, path string) (exists, isLong bool, err error) {
	exists, err = zkrecipes.NewBarrier(s, path).IsSet(ctx)
	if err != nil || !exists {
		return exists, false, err
	}
	_, err = zkrecipes.NewSharedCount(s, path, 0).Get(ctx)
	if errors.Is(err, zkrecipes.ErrBadCount) {
		return true, true, nil
	}
	return true, false, err
}

func countLong(ctx context.Context, c *zkrecipes.AtomicCounter, op string, n int64) (int64, error) {
	var r zkrecipes.AtomicResult
	var err error
	switch op {
	case "get":
		return c.Get(ctx)
	case "set":
		r, err = c.Set(ctx, n)
	default:
		r, err = c.Add(ctx, n)
	}
	return r.PostValue, err
}

// countShared runs op on c; missing says its node did not exist, so that
// an add that cannot fit is refused before the node is created.
func countShared(ctx context.Context, c *zkrecipes.SharedCount, op string, n int64, missing bool) (int64, error) {
	if (op == "set" || (op == "add" && missing)) && int64(int32(n)) != n {
		return 0, fmt.Errorf("%w: %d does not fit a SharedCount (32 bits)", zkrecipes.ErrInvalidArgument, n)
	}
	if op == "set" {
		v, err := c.Set(ctx, int32(n))
		return int64(v.Count), err
	}
	for {
		v, err := c.Get(ctx)
		if err != nil || op == "get" {
			return int64(v.Count), err
		}
		sum := int64(v.Count) + n
		if int64(int32(sum)) != sum {
			return 0, fmt.Errorf("%w: %d + %d overflows a SharedCount (32 bits)", zkrecipes.ErrInvalidArgument, v.Count, n)
		}
		w, err := c.TrySet(ctx, int32(sum), v.Version)
		if errors.Is(err, zkrecipes.ErrVersionChanged) {
			continue // another client wrote first: read again
		}
		return int64(w.Count), err
	}
}
