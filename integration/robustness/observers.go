package robustness

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"strings"

	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/chaos"
)

// The recipes an observer of the watch workload runs. DataRecipes follow
// the shared count's node (SEEN lines); Children follows the queue
// workload's node (LISTED lines).
const (
	WatchData = "watchdata"
	NodeCache = "nodecache"
	TreeCache = "treecache"
	Children  = "watchchildren"
	// NodeCacheOneShot and TreeCacheOneShot are the caches on a Session
	// without the wire layer (zkrecipes.WithWireLayer(false)), where they
	// fall back from their persistent watch to one-shot watches.
	NodeCacheOneShot = "nodecache-oneshot"
	TreeCacheOneShot = "treecache-oneshot"
)

// DataRecipes are the recipes that observe one node's data.
var DataRecipes = []string{WatchData, NodeCache, TreeCache, NodeCacheOneShot, TreeCacheOneShot}

// OneShot tells whether an observer of recipe runs on a Session without
// the wire layer (see NodeCacheOneShot).
func OneShot(recipe string) bool { return recipe == NodeCacheOneShot || recipe == TreeCacheOneShot }

// ObserverActor names observer i of recipe in process proc:
// "<proc>#<recipe><i>/watch", for example "p2#nodecache3/watch".
func ObserverActor(proc, recipe string, i int) string {
	return fmt.Sprintf("%s#%s%d/watch", proc, recipe, i)
}

// Recipe returns the recipe of an observer actor (see ObserverActor);
// an actor that names none is a WatchData observer.
func Recipe(actor string) string {
	_, r, ok := strings.Cut(strings.SplitN(actor, "/", 2)[0], "#")
	r = strings.TrimRight(r, "0123456789")
	if !ok || r == "" {
		return WatchData
	}
	return r
}

// ObserveData follows the node at path with recipe (one of DataRecipes)
// until ctx ends or the recipe stops on an error, which it returns; s is
// a Session without the wire layer for the recipes OneShot names. seen
// is called with every state of the node the recipe reports, in order,
// when the node exists and holds a 4-byte count; the states a recipe
// reports for the node missing are not passed on.
func ObserveData(ctx context.Context, s *zr.Session, recipe, path string, seen func(data []byte, st *zr.NodeStat)) error {
	report := func(data []byte, st *zr.NodeStat) {
		if st != nil && len(data) == 4 {
			seen(data, st)
		}
	}
	switch recipe {
	case WatchData:
		return zr.WatchData(ctx, s, path, func(data []byte, st *zr.NodeStat) error {
			report(data, st)
			return nil
		})
	case NodeCache, NodeCacheOneShot:
		c := zr.NewNodeCache(s, path)
		return drain(ctx, c.Start, c.Events(), c.Close, c.Err, func(ev zr.CacheEvent) {
			if ev.Kind == zr.CacheInitialized || ev.Kind == zr.NodeCreated || ev.Kind == zr.NodeChanged {
				report(ev.Node.Data, &ev.Node.Stat)
			}
		})
	case TreeCache, TreeCacheOneShot:
		c := zr.NewTreeCache(s, path)
		return drain(ctx, c.Start, c.Events(), c.Close, c.Err, func(ev zr.CacheEvent) {
			if (ev.Kind == zr.NodeCreated || ev.Kind == zr.NodeChanged) && ev.Node.Path == path {
				report(ev.Node.Data, &ev.Node.Stat)
			}
		})
	}
	return fmt.Errorf("unknown data recipe %q", recipe)
}

// drain starts a cache and hands its events to fn until ctx ends or the
// cache stops.
func drain(ctx context.Context, start func(context.Context) error, events <-chan zr.CacheEvent, closeFn func(context.Context) error, errFn func() error, fn func(zr.CacheEvent)) error {
	if err := start(ctx); err != nil {
		return err
	}
	defer closeFn(context.Background())
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return errFn()
			}
			if ev.Node != nil {
				fn(ev)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// ObserveChildren follows the children of the node at path with
// WatchChildren until ctx ends or it stops on an error, which it returns;
// seen is called with every listing, and with a nil stat when the node is
// missing (the queue's node is a container: the server deletes it once
// empty).
func ObserveChildren(ctx context.Context, s *zr.Session, path string, seen func(kids []string, st *zr.NodeStat)) error {
	return zr.WatchChildren(ctx, s, path, func(kids []string, st *zr.NodeStat) error {
		seen(kids, st)
		return nil
	})
}

// LogSeen logs a SEEN line: actor saw the count data at st.
func LogSeen(lg *chaos.Log, actor string, data []byte, st *zr.NodeStat) {
	lg.Add(Seen, actor, st.Version, int32(binary.BigEndian.Uint32(data)), st.Mzxid)
}

// LogListed logs a LISTED line: actor saw the listing kids at st; a
// missing node (st nil) is not logged.
func LogListed(lg *chaos.Log, actor string, kids []string, st *zr.NodeStat) {
	if st == nil {
		return
	}
	lg.Add(Listed, actor, st.Pzxid, st.NumChildren, len(kids), ListingHash(kids))
}

// ListingHash is the FNV-1a hash of a sorted listing, in hex: what a
// LISTED line records of the names.
func ListingHash(kids []string) string {
	h := fnv.New64a()
	for _, k := range kids {
		h.Write([]byte(k))
		h.Write([]byte{0})
	}
	return fmt.Sprintf("%016x", h.Sum64())
}
