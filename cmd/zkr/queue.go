package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes"
)

const queueHelp = `usage: zkr queue put PATH DATA|- [--priority N | --delay D | --id ID] [flags]
       zkr queue take PATH [--release] [--wait D] [--delay-order] [flags]
       zkr queue remove PATH ID [flags]
       zkr queue ls PATH [flags]

A work queue on PATH (zkrecipes.WorkQueue), in the node layout and item
encoding of Curator's DistributedQueue built with a lockPath: Curator
producers and consumers on the same paths share it. Items lock under
--lock-path (default PATH-locks), as QueueBuilder.lockPath.

  put PATH DATA   append one item; "-" reads it from stdin (to its end, as
                  it is); data that starts with "-" goes after "--".
                  --priority N names it as Curator's DistributedPriorityQueue
                  (lower N first); --delay D as its DistributedDelayQueue
                  (due D from now); --id ID as its DistributedIdQueue (for
                  remove; no '/' or '|'). Prints nothing.
  take PATH       take the first item no other consumer holds, under its
                  lock, waiting for one; write it to stdout as it is (an item
                  put as a batch of several, by Curator's putMulti: each item
                  followed by a newline), then ack it (delete it). With
                  --release, put it back at the tail of the queue instead.
                  --delay-order takes only items that are due, as a
                  DistributedDelayQueue consumer.
  remove PATH ID  delete every item put with id ID that no consumer holds,
                  as Curator's DistributedIdQueue.remove; print how many.
                  An item a consumer holds is left to it.
  ls PATH         list the items in the order consumers take them (by name,
                  less any "|ID|" in it, as Curator's DistributedIdQueue),
                  one a line: the name, a tab, and "locked" while a
                  consumer holds it, else "ready". A queue never used (no
                  node at PATH) lists nothing.

Exit status: 0 done; 64 usage error, bad path or bad ID; 65 take: the item is not in
Curator's item encoding (it is put back; delete it with zkr rm); 69 ZooKeeper
unavailable or another ZooKeeper error (put: if the connection was lost on
the way the item may have been put, "outcome unknown": look with ls before
putting it again; take: the item, if taken, is put back, or stays in the
queue for another consumer); 73 take: no item within
--wait; 74 take: the item's lock was lost and another consumer took it
before the ack (it was written out, and will be processed again); 130
interrupted (take: nothing was taken).

flags:
`

func cmdQueue(args []string) int {
	fs := newFlagSet("zkr queue", queueHelp)
	var c common
	c.register(fs)
	lockPath := fs.String("lock-path", "", "take, remove, ls: the path items lock under, as Curator's QueueBuilder.lockPath (default PATH-locks)")
	release := fs.Bool("release", false, "take: put the item back at the tail of the queue instead of acking it")
	wait := fs.Duration("wait", 0, "take: exit 73 if no item is taken within this long (0: wait forever)")
	delayOrder := fs.Bool("delay-order", false, "take: take only items that are due, earliest first (Curator's DistributedDelayQueue)")
	priority := fs.Int("priority", 0, "put: the item's priority, as Curator's DistributedPriorityQueue (lower first; only with this flag given)")
	delay := fs.Duration("delay", 0, "put: the item is due this long from now, as Curator's DistributedDelayQueue")
	id := fs.String("id", "", "put: the item's id, as Curator's DistributedIdQueue (for remove)")
	pos, rest, code, ok := parseOrExit(fs, args)
	if !ok {
		return code
	}
	if len(pos) < 2 {
		return usageErr(fs.Name(), "want put, take, remove or ls and a PATH")
	}
	action, path := pos[0], pos[1]
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var opts []zkrecipes.WorkQueueOption
	if set["lock-path"] {
		opts = append(opts, zkrecipes.WithLockPath(*lockPath))
	}
	switch action {
	case "put":
		var data []byte
		switch args := append(pos[2:], rest...); {
		case len(args) != 1:
			return usageErr(fs.Name(), "put: want PATH and one DATA argument (or - for stdin), got %d", len(args))
		case args[0] == "-" && rest == nil:
			b, err := io.ReadAll(os.Stdin)
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s: read stdin: %v\n", fs.Name(), err)
				return exitUnavailable
			}
			data = b
		default:
			data = []byte(args[0])
		}
		var popts []zkrecipes.PutOption
		switch {
		case set["priority"] && set["delay"], set["priority"] && set["id"], set["delay"] && set["id"]:
			return usageErr(fs.Name(), "put: one of --priority, --delay and --id, no more")
		case set["id"]:
			popts = append(popts, zkrecipes.WithID(*id))
		case set["priority"] && int(int32(*priority)) != *priority:
			return usageErr(fs.Name(), "put: --priority %d does not fit 32 bits", *priority)
		case set["priority"]:
			popts = append(popts, zkrecipes.WithPriority(int32(*priority)))
		case *delay < 0:
			return usageErr(fs.Name(), "put: --delay must not be negative")
		case set["delay"]:
			popts = append(popts, zkrecipes.WithDelayUntil(time.Now().Add(*delay)))
		}
		return queuePut(&c, fs.Name(), path, data, opts, popts)
	case "take":
		switch {
		case len(pos) != 2 || rest != nil:
			return usageErr(fs.Name(), "take: want one PATH")
		case *wait < 0:
			return usageErr(fs.Name(), "--wait must not be negative")
		case c.servers == "":
			return usageErr(fs.Name(), "no servers: use --servers or set ZK_SERVERS")
		}
		if *delayOrder {
			opts = append(opts, zkrecipes.WithDelayOrder())
		}
		return queueTake(&c, fs.Name(), path, opts, *wait, *release)
	case "remove":
		if args := append(pos[2:], rest...); len(args) != 1 {
			return usageErr(fs.Name(), "remove: want PATH and one ID, got %d", len(args))
		}
		return queueRemove(&c, fs.Name(), path, append(pos[2:], rest...)[0], opts)
	case "ls":
		if len(pos) != 2 || rest != nil {
			return usageErr(fs.Name(), "ls: want one PATH")
		}
		return queueLs(&c, fs.Name(), path, *lockPath)
	}
	return usageErr(fs.Name(), "unknown action %q: want put, take, remove or ls", action)
}

func queuePut(c *common, name, path string, data []byte, opts []zkrecipes.WorkQueueOption, popts []zkrecipes.PutOption) int {
	ctx, s, done, code := c.request(name)
	if s == nil {
		return code
	}
	defer done()
	if err := zkrecipes.NewWorkQueue(s, path, opts...).Put(ctx, data, popts...); err != nil {
		if errors.Is(err, zkrecipes.ErrDataTooLarge) {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			return exitUsage
		}
		return zkErr(name, err)
	}
	return 0
}

// queueRemove removes the items of id that no consumer holds and prints
// how many.
func queueRemove(c *common, name, path, id string, opts []zkrecipes.WorkQueueOption) int {
	ctx, s, done, code := c.request(name)
	if s == nil {
		return code
	}
	defer done()
	n, err := zkrecipes.NewWorkQueue(s, path, opts...).Remove(ctx, id)
	if err != nil {
		if n > 0 {
			fmt.Fprintf(os.Stderr, "%s: removed %d before the error\n", name, n)
		}
		return zkErr(name, err)
	}
	if _, err := fmt.Fprintln(os.Stdout, n); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return exitUnavailable
	}
	return 0
}

// queueTake takes one item, writes it out and acks (or releases) it. The
// lock counts as lost only with the session (LoseOnLost): the ack, right
// after the write, still deletes an item whose lock was in doubt as long
// as no other consumer took it.
func queueTake(c *common, name, path string, opts []zkrecipes.WorkQueueOption, wait time.Duration, release bool) int {
	w, err := c.startWaiting(zkrecipes.LoseOnLost)
	defer w.close()
	if err != nil {
		return zkErr(name, err)
	}
	q := zkrecipes.NewWorkQueue(w.s, path, opts...)
	ctx, cancel := w.ctx, context.CancelFunc(func() {})
	if wait > 0 {
		ctx, cancel = context.WithTimeout(w.ctx, wait)
	}
	defer cancel()
	type taken struct {
		wi  *zkrecipes.WorkItem
		err error
	}
	// The item comes back with its error (ErrBadWorkItem): the result
	// carries both, so that interruptible hands the item over.
	t, err := interruptible(ctx, w.cancel, w.sigs, func(ctx context.Context) (taken, error) {
		wi, err := q.Take(ctx)
		if wi == nil {
			return taken{}, err
		}
		return taken{wi, err}, nil
	})
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		fmt.Fprintf(os.Stderr, "%s: no item in %s within %v\n", name, path, wait)
		return exitNotAcquired
	case err != nil:
		return zkErr(name, err)
	}
	// The end of the item is not interrupted: a signal now waits for it.
	ectx, ecancel := context.WithTimeout(context.Background(), c.connectTimeout+c.sessionTimeout)
	defer ecancel()
	wi := t.wi
	if t.err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v (put back; delete it with zkr rm)\n", name, t.err)
		if err := wi.Release(ectx); err != nil {
			return zkErr(name, err)
		}
		return exitConflict
	}
	if err := writeItems(os.Stdout, wi.Items()); err != nil {
		fmt.Fprintf(os.Stderr, "%s: write the item: %v (putting it back)\n", name, err)
		if err := wi.Release(ectx); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		}
		return exitUnavailable
	}
	end := wi.Ack
	if release {
		end = wi.Release
	}
	switch err := end(ectx); {
	case errors.Is(err, zkrecipes.ErrItemLost):
		fmt.Fprintf(os.Stderr, "%s: %s: %v\n", name, wi.Name(), err)
		return exitLost
	case err != nil:
		return zkErr(name, err)
	}
	return 0
}

// writeItems writes one item as it is, a batch of several each followed by
// a newline.
func writeItems(out io.Writer, items [][]byte) error {
	if len(items) == 1 {
		_, err := out.Write(items[0])
		return err
	}
	for _, b := range items {
		if _, err := out.Write(append(b[:len(b):len(b)], '\n')); err != nil {
			return err
		}
	}
	return nil
}

// queueLs lists the items of the queue at path and whether each is
// locked: the children of path named as items, sorted as Curator's
// consumers sort them, against the children of the lock path.
func queueLs(c *common, name, path, lockPath string) int {
	if lockPath == "" {
		lockPath = strings.TrimSuffix(path, "/") + "-locks"
	}
	ctx, s, done, code := c.request(name)
	if s == nil {
		return code
	}
	defer done()
	kids, _, err := s.Children(ctx, path)
	if errors.Is(err, zkrecipes.ErrNoNode) {
		return 0
	}
	if err != nil {
		return zkErr(name, err)
	}
	locks, _, err := s.Children(ctx, lockPath)
	if err != nil && !errors.Is(err, zkrecipes.ErrNoNode) {
		return zkErr(name, err)
	}
	locked := make(map[string]bool, len(locks))
	for _, l := range locks {
		locked[l] = true
	}
	var items []string
	for _, k := range kids {
		if strings.HasPrefix(k, "queue-") {
			items = append(items, k)
		}
	}
	sort.Slice(items, func(i, j int) bool {
		a, b := queueOrderKey(items[i]), queueOrderKey(items[j])
		return a < b || a == b && items[i] < items[j]
	})
	var b strings.Builder
	for _, it := range items {
		state := "ready"
		if locked[it] {
			state = "locked"
		}
		fmt.Fprintf(&b, "%s\t%s\n", it, state)
	}
	if _, err := io.WriteString(os.Stdout, b.String()); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return exitUnavailable
	}
	return 0
}

// queueOrderKey is what consumers sort an item's name by: the name less
// its first "|...|" part (an id, or a due time), as Curator's
// DistributedIdQueue sorts, so that the ids leave the sequence order
// alone; a plain or priority name is itself.
func queueOrderKey(name string) string {
	head, rest, ok := strings.Cut(name, "|")
	if !ok {
		return name
	}
	_, tail, ok := strings.Cut(rest, "|")
	if !ok {
		return name
	}
	return head + tail
}
