// Command rw-cache-refresh shows a read-write lock guarding a shared cache:
// readers (here three, each with its own ZooKeeper session as separate
// processes would have) read the cache under the read lock and share it;
// a refresher rebuilds it under the write lock, in two steps, and no reader
// ever sees a half-written cache. The cache is a file in a temporary
// directory, standing for any store several processes read.
//
//	ZK_SERVERS=127.0.0.1:2181 go run ./examples/rw-cache-refresh
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes"
)

const lockPath = "/examples/rw-cache-refresh"

func main() {
	log.SetFlags(0)
	servers := strings.Split(envOr("ZK_SERVERS", "127.0.0.1:2181"), ",")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir, err := os.MkdirTemp("", "rw-cache-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cache := filepath.Join(dir, "cache.txt")
	if err := os.WriteFile(cache, []byte("version 0\nversion 0\n"), 0o644); err != nil {
		log.Fatal(err)
	}

	var reads, torn atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 1; i <= 3; i++ {
		s, err := zkrecipes.Connect(ctx, servers)
		if err != nil {
			log.Fatal(err)
		}
		defer s.Close()
		read := zkrecipes.NewRWMutex(s, lockPath).ReadLock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond): // between two requests
				}
				lease, err := read.Acquire(ctx)
				if err != nil {
					log.Printf("reader %d: %v", i, err)
					return
				}
				b, _ := os.ReadFile(cache)
				lines := strings.Split(strings.TrimSpace(string(b)), "\n")
				if len(lines) != 2 || lines[0] != lines[1] {
					torn.Add(1) // a half-written cache: the lock failed
				}
				reads.Add(1)
				_ = lease.Release(ctx)
			}
		}()
	}

	// The refresher: a separate session, three refreshes.
	s, err := zkrecipes.Connect(ctx, servers)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	write := zkrecipes.NewRWMutex(s, lockPath).WriteLock()
	for v := 1; v <= 3; v++ {
		time.Sleep(300 * time.Millisecond) // let the readers read for a while
		lease, err := write.Acquire(ctx)
		if err != nil {
			log.Fatal(err)
		}
		before := reads.Load()
		// Rebuild in two steps: a reader in between would see two versions.
		line := fmt.Sprintf("version %d\n", v)
		_ = os.WriteFile(cache, []byte(line), 0o644)
		time.Sleep(100 * time.Millisecond)
		_ = os.WriteFile(cache, []byte(line+line), 0o644)
		fmt.Printf("refresher: cache rebuilt to version %d (token %d); reads during the rebuild: %d\n",
			v, lease.Token(), reads.Load()-before)
		if err := lease.Release(ctx); err != nil {
			log.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	fmt.Printf("readers: %d reads, %d saw a half-written cache\n", reads.Load(), torn.Load())
	if torn.Load() != 0 {
		os.Exit(1)
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
