// Command semaphore-jobs runs six jobs that each need a scarce resource
// (say, a licence or a database connection slot) of which only two exist
// across the whole fleet: a semaphore of two, shared with Curator's
// InterProcessSemaphoreV2. Each job has its own ZooKeeper session, as
// separate processes would; at most two run at any moment.
//
//	ZK_SERVERS=127.0.0.1:2181 go run ./examples/semaphore-jobs
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes"
)

const (
	path  = "/examples/semaphore-jobs"
	slots = 2
	jobs  = 6
)

func main() {
	log.SetFlags(0)
	servers := strings.Split(envOr("ZK_SERVERS", "127.0.0.1:2181"), ",")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	var running, peak atomic.Int64
	var wg sync.WaitGroup
	for j := 1; j <= jobs; j++ {
		s, err := zkrecipes.Connect(ctx, servers)
		if err != nil {
			log.Fatal(err)
		}
		defer s.Close()
		sem := zkrecipes.NewSemaphore(s, path, slots, zkrecipes.WithNodeData([]byte(fmt.Sprintf("job %d", j))))
		wg.Add(1)
		go func() {
			defer wg.Done()
			leases, err := sem.Acquire(ctx, 1) // one slot
			if err != nil {
				log.Printf("job %d: %v", j, err)
				return
			}
			lease := leases[0]
			n := running.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			fmt.Printf("job %d: started (%d of %d slots in use, token %d)\n", j, n, slots, lease.Token())
			work, stop := lease.Context(ctx) // ends if the slot is lost
			select {
			case <-time.After(500 * time.Millisecond): // the work
			case <-work.Done(): // the slot was lost: stop working
				fmt.Printf("job %d: slot lost: %v\n", j, context.Cause(work))
			}
			stop()
			running.Add(-1)
			fmt.Printf("job %d: done\n", j)
			if err := lease.Release(ctx); err != nil {
				log.Printf("job %d: release: %v", j, err)
			}
		}()
	}
	wg.Wait()
	fmt.Printf("%d jobs ran, at most %d at once (limit %d)\n", jobs, peak.Load(), slots)
	if peak.Load() > slots {
		os.Exit(1)
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
