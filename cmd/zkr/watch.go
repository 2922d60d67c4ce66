package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/zkrecipes/zkrecipes"
)

const watchHelp = `usage: zkr watch PATH [-r] [--depth N | --persistent] [flags]

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

With --persistent, one persistent watch (ZooKeeper 3.6+; recursive with
-r) prints what the server notifies, no data read, nothing coalesced:

  15:04:05.000 WATCHING /app/db (persistent, recursive)  (set: changes follow)
  15:04:05.000 NODE_CREATED /app/db/x
  15:04:05.010 DATA_CHANGED /app/db/x zxid=0x1f  (zxid: servers 3.9+)
  15:04:06.000 RESET RECONNECTED session=0x1000a  (changes may be missed)

flags:
`

func cmdWatch(args []string) int {
	fs := newFlagSet("zkr watch", watchHelp)
	var c common
	c.register(fs)
	tree := fs.Bool("r", false, "watch the tree under PATH, not only the node")
	depth := fs.Int("depth", -1, "with -r: levels below PATH to watch (-1: all)")
	persistent := fs.Bool("persistent", false, "print the notifications of one persistent watch (recursive with -r)")
	pos, argv, code, ok := parseOrExit(fs, args)
	if !ok {
		return code
	}
	switch {
	case len(pos) != 1 || argv != nil:
		return usageErr(fs.Name(), "want exactly one PATH")
	case *depth < -1 || (*depth != -1 && !*tree):
		return usageErr(fs.Name(), "--depth takes -r and a level >= 0")
	case *depth != -1 && *persistent:
		return usageErr(fs.Name(), "--depth does not go with --persistent")
	case c.servers == "":
		return usageErr(fs.Name(), "no servers: use --servers or set ZK_SERVERS")
	}
	w, err := c.startWaiting(zkrecipes.LoseOnLost)
	defer w.close()
	if err != nil {
		return zkErr(fs.Name(), err)
	}
	if *persistent {
		return watchPersistent(fs.Name(), w, pos[0], *tree)
	}
	type cache interface {
		Start(context.Context) error
		Events() <-chan zkrecipes.CacheEvent
		Err() error
		Close(context.Context) error
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
	defer cc.Close(context.Background())
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

// watchPersistent prints the events of a persistent watch on path until
// Ctrl-C (see watchHelp).
func watchPersistent(name string, w *waiting, path string, recursive bool) int {
	pw := zkrecipes.NewPersistentWatch(w.s, path, zkrecipes.WithRecursive(recursive))
	if _, err := interruptible(w.ctx, w.cancel, w.sigs, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, pw.Start(ctx)
	}); err != nil {
		return zkErr(name, err)
	}
	defer pw.Close(context.Background())
	mode := "persistent"
	if recursive {
		mode += ", recursive"
	}
	fmt.Fprintf(os.Stdout, "%s WATCHING %s (%s)\n", time.Now().Format("15:04:05.000"), path, mode)
	for {
		select {
		case ev, ok := <-pw.Events():
			if !ok {
				return zkErr(name, fmt.Errorf("stopped: %w", pw.Err()))
			}
			line := time.Now().Format("15:04:05.000") + " "
			switch {
			case ev.Kind == zkrecipes.WatchReset && ev.SessionID != 0:
				line += fmt.Sprintf("RESET %s session=0x%x", ev.Reset, ev.SessionID)
			case ev.Kind == zkrecipes.WatchReset:
				line += "RESET " + ev.Reset.String()
			default:
				line += ev.Kind.String() + " " + ev.Path
				if ev.Zxid > 0 {
					line += fmt.Sprintf(" zxid=0x%x", ev.Zxid)
				}
			}
			fmt.Fprintln(os.Stdout, line)
		case <-w.sigs:
			return 0
		}
	}
}
