package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// The cache curve (issue 45): a TreeCache over trees of growing size,
// beside the reads its load must make at least (the raw floor) and Apache
// Curator 5.4's CuratorCache. This file builds and deletes the trees and
// measures the floor; cachecurve_treecache.go measures the TreeCache,
// cachecurve_curator.go the CuratorCache.

// CacheTree is a tree of the cache curve: a root with K children, each
// with K−1 children of its own (the shape of BenchmarkTreeCache10k, whose
// K is 100), 32 bytes of data in every node.
type CacheTree struct {
	Root  string `json:"root"`
	K     int    `json:"k"`
	Nodes int    `json:"nodes"` // 1 + K + K(K−1) = 1 + K²
}

// cacheTreeData is the data of every node of a CacheTree.
var cacheTreeData = make([]byte, 32)

// NewCacheTree returns the tree at root of about size nodes: K is the
// smallest with 1 + K² ≥ size (10,000: K = 100, 10,001 nodes; 100,000:
// 317, 100,490; 1,000,000: 1,000, 1,000,001).
func NewCacheTree(root string, size int) CacheTree {
	k := max(int(math.Ceil(math.Sqrt(float64(size-1)))), 2)
	return CacheTree{Root: root, K: k, Nodes: 1 + k*k}
}

// Child returns the path of the root's i-th child.
func (t CacheTree) Child(i int) string { return fmt.Sprintf("%s/c%04d", t.Root, i) }

// Grandchild returns the path of the j-th child of the root's i-th child.
func (t CacheTree) Grandchild(i, j int) string { return fmt.Sprintf("%s/c%04d/g%04d", t.Root, i, j) }

// cacheTreeInFlight is the multi requests BuildCacheTree and
// DeleteCacheTree keep in flight.
const cacheTreeInFlight = 8

// BuildCacheTree creates t (its root's parents too, where missing) on
// conn: the root, then one multi request per child creating the child and
// its K−1 children (1,000 creates at K = 1,000, some 120 KB: below the
// server's 1 MB jute.maxbuffer), 8 in flight. It returns the time the
// multis took. t.Root must not exist.
func BuildCacheTree(ctx context.Context, conn *zk.Conn, t CacheTree) (time.Duration, error) {
	if err := ensurePath(conn, parentOf(t.Root)); err != nil {
		return 0, err
	}
	acl := zk.WorldACL(zk.PermAll)
	if _, err := conn.Create(t.Root, cacheTreeData, 0, acl); err != nil {
		return 0, fmt.Errorf("bench: create %s: %w", t.Root, err)
	}
	t0 := time.Now()
	err := runMultis(ctx, conn, t.K, func(i int) (string, []any) {
		ops := make([]any, 0, t.K)
		ops = append(ops, &zk.CreateRequest{Path: t.Child(i), Data: cacheTreeData, Acl: acl})
		for j := range t.K - 1 {
			ops = append(ops, &zk.CreateRequest{Path: t.Grandchild(i, j), Data: cacheTreeData, Acl: acl})
		}
		return "build " + t.Child(i), ops
	})
	return time.Since(t0), err
}

// runMultis sends count multi requests on conn, cacheTreeInFlight in
// flight: request i has the ops multi(i) returns, and what names it in
// an error. It returns the first error ("bench: what: ..."); after one,
// no further request is sent.
func runMultis(ctx context.Context, conn *zk.Conn, count int, multi func(i int) (what string, ops []any)) error {
	return forEach(ctx, count, cacheTreeInFlight, func(i int) error {
		what, ops := multi(i)
		if len(ops) == 0 {
			return nil
		}
		if _, err := conn.Multi(ops...); err != nil {
			return fmt.Errorf("bench: %s: %w", what, err)
		}
		return nil
	})
}

// cacheTreeDeleteBatch is the most deletes DeleteCacheTree puts in one
// multi request.
const cacheTreeDeleteBatch = 1000

// DeleteCacheTree deletes root and every node under it on conn, for a tree
// of at most three levels as BuildCacheTree and BuildServiceSet make it
// (nodes added below the root's children are deleted too): it lists the
// children of the root's children, 8 at a time, deletes them in multi
// requests of at most 1,000 deletes, 8 in flight (so that one child with
// a million children is deleted as fast as a thousand with a thousand
// each), then the root's children the same way, then the root. It
// returns the time it took.
func DeleteCacheTree(ctx context.Context, conn *zk.Conn, root string) (time.Duration, error) {
	t0 := time.Now()
	kids, _, err := conn.Children(root)
	if errors.Is(err, zk.ErrNoNode) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	children := make([]string, len(kids))
	grandchildren := make([][]string, len(kids))
	err = forEach(ctx, len(kids), cacheTreeInFlight, func(i int) error {
		children[i] = root + "/" + kids[i]
		gs, _, err := conn.Children(children[i])
		if err != nil {
			return fmt.Errorf("bench: delete: list %s: %w", children[i], err)
		}
		for _, g := range gs {
			grandchildren[i] = append(grandchildren[i], children[i]+"/"+g)
		}
		return nil
	})
	if err == nil {
		err = deleteInMultis(ctx, conn, slices.Concat(grandchildren...))
	}
	if err == nil {
		err = deleteInMultis(ctx, conn, children)
	}
	if err == nil {
		err = conn.Delete(root, -1)
	}
	return time.Since(t0), err
}

// deleteInMultis deletes paths (none the parent of another) on conn in
// multi requests of at most cacheTreeDeleteBatch deletes (runMultis).
func deleteInMultis(ctx context.Context, conn *zk.Conn, paths []string) error {
	batches := (len(paths) + cacheTreeDeleteBatch - 1) / cacheTreeDeleteBatch
	return runMultis(ctx, conn, batches, func(b int) (string, []any) {
		batch := paths[b*cacheTreeDeleteBatch : min((b+1)*cacheTreeDeleteBatch, len(paths))]
		ops := make([]any, len(batch))
		for i, p := range batch {
			ops[i] = &zk.DeleteRequest{Path: p, Version: -1}
		}
		return "delete from " + batch[0], ops
	})
}

// RawTreeLoadWorkers is the goroutines the raw floor reads from, as
// BenchmarkTreeCache10k's raw-load-ms.
const RawTreeLoadWorkers = 32

// RawTreeLoad is the cache curve's floor: the reads any load of the tree
// at root must make, on a plain go-zookeeper connection of its own, from
// RawTreeLoadWorkers goroutines: a getData of each node and a getChildren
// of each node whose Stat says it has children, level by level (walkTree),
// setting no watch and keeping nothing. Load is the time from the first
// read to the last reply; Nodes the nodes read.
func RawTreeLoad(ctx context.Context, env Env, root string) (CacheRun, error) {
	conn, err := ConnectRaw(ctx, env.ServerFor(0))
	if err != nil {
		return CacheRun{}, err
	}
	defer conn.Close()
	t0 := time.Now()
	n, err := walkTree(ctx, conn, root, RawTreeLoadWorkers, nil)
	if err != nil {
		return CacheRun{}, err
	}
	return CacheRun{Nodes: n, Load: time.Since(t0)}, nil
}

// walkTree reads root and every node under it on conn from workers
// goroutines, level by level: a getData of each node of a level, and a
// getChildren of those whose Stat counts children, whose children make
// the next level. visit, when not nil, is called with each node read,
// from several goroutines at once. A node deleted meanwhile is skipped.
// It returns the nodes read.
func walkTree(ctx context.Context, conn *zk.Conn, root string, workers int, visit func(path string, data []byte, st *zk.Stat)) (int, error) {
	var read atomic.Int64
	level := []string{root}
	for len(level) > 0 {
		var mu sync.Mutex
		var next []string
		err := forEach(ctx, len(level), workers, func(i int) error {
			p := level[i]
			data, st, err := conn.Get(p)
			if errors.Is(err, zk.ErrNoNode) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("bench: get %s: %w", p, err)
			}
			read.Add(1)
			if visit != nil {
				visit(p, data, st)
			}
			if st.NumChildren == 0 {
				return nil
			}
			kids, _, err := conn.Children(p)
			if err != nil && !errors.Is(err, zk.ErrNoNode) {
				return fmt.Errorf("bench: children of %s: %w", p, err)
			}
			mu.Lock()
			for _, k := range kids {
				next = append(next, p+"/"+k)
			}
			mu.Unlock()
			return nil
		})
		if err != nil {
			return int(read.Load()), err
		}
		level = next
	}
	return int(read.Load()), nil
}

// parentOf returns the parent of an absolute path ("/" for a child of the
// root).
func parentOf(p string) string {
	for i := len(p) - 1; i > 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "/"
}
