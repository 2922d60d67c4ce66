package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/zkrecipes/zkrecipes"
)

const watchHelp = `usage: zkr watch PATH [-r] [--depth N] [flags]

Prints the node at PATH as it is now, then every change to it as it
happens, until Ctrl-C. With -r, the whole tree under PATH (a TreeCache):
every node first, then every creation, change and deletion. One line per
event:

  15:04:05.000 CREATED /app/db czxid=12 mzxid=14 version=2 "data"
  15:04:05.000 INITIALIZED        (the first state is printed above it)
  15:04:06.120 CHANGED /app/db czxid=12 mzxid=19 version=3 "new data"
  15:04:07.010 DELETED /app/db czxid=12 mzxid=19 version=3 "new data"
  15:04:08.000 SUSPENDED | RECONNECTED | LOST   (the connection)

A slow terminal may see changes coalesced, never a stale last state. Data
is quoted, and cut after 200 bytes.

flags:
`

func cmdWatch(args []string) int {
	fs := newFlagSet("zkr watch", watchHelp)
	var c common
	c.register(fs)
	tree := fs.Bool("r", false, "watch the tree under PATH, not only the node")
	depth := fs.Int("depth", -1, "with -r: levels below PATH to watch (-1: all)")
	pos, argv, code, ok := parseOrExit(fs, args)
	if !ok {
		return code
	}
	switch {
	case len(pos) != 1 || argv != nil:
		return usageErr(fs.Name(), "want exactly one PATH")
	case *depth < -1 || (*depth != -1 && !*tree):
		return usageErr(fs.Name(), "--depth takes -r and a level >= 0")
	case c.servers == "":
		return usageErr(fs.Name(), "no servers: use --servers or set ZK_SERVERS")
	}
	w, err := c.startWaiting(zkrecipes.LoseOnLost)
	defer w.close()
	if err != nil {
		return zkErr(fs.Name(), err)
	}
	type cache interface {
		Start(context.Context) error
		Events() <-chan zkrecipes.CacheEvent
		Err() error
		Close() error
	}
	var cc cache
	if *tree {
		var opts []zkrecipes.TreeCacheOption
		if *depth >= 0 {
			opts = append(opts, zkrecipes.WithMaxDepth(*depth))
		}
		cc = zkrecipes.NewTreeCache(w.s, pos[0], opts...)
	} else {
		cc = zkrecipes.NewNodeCache(w.s, pos[0])
	}
	if _, err := interruptible(w.ctx, w.cancel, w.sigs, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, cc.Start(ctx)
	}); err != nil {
		return zkErr(fs.Name(), err)
	}
	defer cc.Close()
	for {
		select {
		case ev, ok := <-cc.Events():
			if !ok {
				return zkErr(fs.Name(), fmt.Errorf("stopped: %w", cc.Err()))
			}
			printEvent(ev, !*tree)
		case <-w.sigs:
			return 0
		}
	}
}

// printEvent prints one cache event as a line (see watchHelp).
func printEvent(ev zkrecipes.CacheEvent, single bool) {
	ts := time.Now()
	kind := map[zkrecipes.CacheEventKind]string{zkrecipes.NodeCreated: "CREATED", zkrecipes.NodeChanged: "CHANGED",
		zkrecipes.NodeDeleted: "DELETED", zkrecipes.CacheInitialized: "INITIALIZED", zkrecipes.CacheSuspended: "SUSPENDED",
		zkrecipes.CacheReconnected: "RECONNECTED", zkrecipes.CacheLost: "LOST"}[ev.Kind]
	line := ts.Format("15:04:05.000") + " " + kind
	if n := ev.Node; n != nil {
		data := n.Data
		cut := ""
		if len(data) > 200 {
			data, cut = data[:200], "..."
		}
		line += fmt.Sprintf(" %s czxid=%d mzxid=%d version=%d %s%s", n.Path, n.Stat.Czxid, n.Stat.Mzxid, n.Stat.Version, strconv.Quote(string(data)), cut)
	} else if ev.Kind == zkrecipes.CacheInitialized && single {
		line += " (no node)"
	}
	fmt.Fprintln(os.Stdout, line)
}
