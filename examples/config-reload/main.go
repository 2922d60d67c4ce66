// Command config-reload shows a service that keeps its configuration in a
// ZooKeeper tree and reloads it while it runs: a TreeCache holds the tree,
// and every batch of changes is turned into a new immutable Config that
// the request path picks up atomically, without a lock and without a round
// trip to ZooKeeper. An operator (another session, as another process
// would be) changes a value, adds a feature flag and removes one; the
// service prints each configuration it applies.
//
//	ZK_SERVERS=127.0.0.1:2181 go run ./examples/config-reload
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"maps"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes"
)

const root = "/examples/config-reload"

// Config is one immutable configuration: every node under root that holds
// data, by its path below root ("http/port").
type Config struct {
	Values map[string]string
}

func (c *Config) String() string {
	keys := make([]string, 0, len(c.Values))
	for k := range c.Values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%s", k, c.Values[k])
	}
	return b.String()
}

// configOf builds a Config from a snapshot of the tree.
func configOf(tree map[string]zkrecipes.CachedNode) *Config {
	c := &Config{Values: map[string]string{}}
	for p, n := range tree {
		if len(n.Data) > 0 && p != root {
			c.Values[strings.TrimPrefix(p, root+"/")] = string(n.Data)
		}
	}
	return c
}

// service holds the current configuration for its request path.
type service struct {
	cfg     atomic.Pointer[Config]
	applied chan *Config // each configuration applied, for the demo
}

// follow applies the cache's changes until its events end: it takes every
// event already queued, then rebuilds the configuration once.
func (s *service) follow(cache *zkrecipes.TreeCache) {
	ready := false
	for ev := range cache.Events() {
		if ev.Kind == zkrecipes.CacheSuspended {
			log.Print("service: connection lost; serving the last configuration")
		}
		ready = ready || ev.Kind == zkrecipes.CacheInitialized
	drain:
		for {
			select {
			case ev, ok := <-cache.Events():
				if !ok {
					return
				}
				ready = ready || ev.Kind == zkrecipes.CacheInitialized
			default:
				break drain
			}
		}
		if !ready {
			continue // the initial load is still being reported
		}
		cfg := configOf(cache.Snapshot())
		if old := s.cfg.Load(); old != nil && maps.Equal(old.Values, cfg.Values) {
			continue // a connection event, or a node without data: nothing to apply
		}
		s.cfg.Store(cfg)
		s.applied <- cfg
	}
}

// handle is the request path: one atomic load, no lock, no round trip.
func (s *service) handle() string {
	c := s.cfg.Load()
	return fmt.Sprintf("listening on :%s, dark mode %v", c.Values["http/port"], c.Values["features/dark-mode"] == "on")
}

func main() {
	log.SetFlags(0)
	servers := strings.Split(envOr("ZK_SERVERS", "127.0.0.1:2181"), ",")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The operator's session seeds the configuration.
	op, err := zkrecipes.Connect(ctx, servers)
	if err != nil {
		log.Fatal(err)
	}
	defer op.Close()
	deleteTree(ctx, op, root) // what an interrupted run left
	set := func(key, value string) {
		_, err := op.Create(ctx, root+"/"+key, []byte(value), zkrecipes.WithParents(true))
		if errors.Is(err, zkrecipes.ErrNodeExists) {
			_, err = op.Set(ctx, root+"/"+key, []byte(value))
		}
		if err != nil {
			log.Fatal(err)
		}
	}
	set("http/port", "8080")
	set("http/timeout", "5s")
	set("features/beta", "on")

	// The service's own session and cache.
	sess, err := zkrecipes.Connect(ctx, servers)
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()
	cache := zkrecipes.NewTreeCache(sess, root)
	if err := cache.Start(ctx); err != nil {
		log.Fatal(err)
	}
	svc := &service{applied: make(chan *Config, 16)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		svc.follow(cache)
	}()
	await := func(what string, ok func(*Config) bool) {
		for {
			select {
			case c := <-svc.applied:
				log.Printf("service: applied%s", c)
				if ok(c) {
					log.Printf("service: %s -> %s", what, svc.handle())
					return
				}
			case <-ctx.Done():
				log.Fatalf("%s: not applied: %v", what, ctx.Err())
			}
		}
	}
	await("started", func(c *Config) bool { return c.Values["http/port"] == "8080" })

	set("http/port", "9090")
	await("port changed", func(c *Config) bool { return c.Values["http/port"] == "9090" })
	set("features/dark-mode", "on")
	await("flag added", func(c *Config) bool { return c.Values["features/dark-mode"] == "on" })
	if err := op.Delete(ctx, root+"/features/beta"); err != nil {
		log.Fatal(err)
	}
	await("flag removed", func(c *Config) bool { _, ok := c.Values["features/beta"]; return !ok })

	if err := cache.Close(ctx); err != nil {
		log.Fatal(err)
	}
	<-done
	deleteTree(ctx, op, root)
}

// deleteTree deletes the node at p and everything below it, if any.
func deleteTree(ctx context.Context, s *zkrecipes.Session, p string) {
	if err := s.Delete(ctx, p, zkrecipes.WithDeleteChildren(true)); err != nil && !errors.Is(err, zkrecipes.ErrNoNode) {
		log.Fatal(err)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
