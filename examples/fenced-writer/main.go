// Command fenced-writer shows why a lock holder must pass its fencing token
// to the storage it writes: a holder that pauses (a GC pause, a stopped VM)
// past its session timeout loses the lock without noticing, another client
// takes it, and the old holder's late write must be refused. Here the
// storage is a stub that remembers the highest token it has seen.
//
//	ZK_SERVERS=127.0.0.1:2181 go run ./examples/fenced-writer
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes"
)

// errStale is the storage's answer to a write with an old token.
var errStale = errors.New("rejected: stale fencing token")

// storage accepts a write only if its token is at least the highest seen.
type storage struct {
	mu      sync.Mutex
	highest int64
	value   string
}

func (s *storage) write(token int64, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.highest {
		return fmt.Errorf("%w (%d < %d)", errStale, token, s.highest)
	}
	s.highest, s.value = token, value
	return nil
}

func main() {
	log.SetFlags(0)
	servers := strings.Split(envOr("ZK_SERVERS", "127.0.0.1:2181"), ",")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const path = "/examples/fenced-writer"
	store := &storage{}

	// Client A takes the lock and writes.
	a, err := zkrecipes.Connect(ctx, servers)
	if err != nil {
		log.Fatal(err)
	}
	leaseA, err := zkrecipes.NewMutex(a, path).Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	tokenA := leaseA.Token()
	fmt.Printf("A holds the lock, token %d; write: %v\n", tokenA, store.write(tokenA, "A1"))

	// A pauses. While it is frozen its session ends (here we close it; a
	// pause longer than the session timeout has the same effect), so the
	// server deletes A's lock node. A, frozen, does not look at Done.
	fmt.Println("A pauses; meanwhile its session ends")
	a.Close()

	// Client B gets the lock and writes with its own, higher token.
	b, err := zkrecipes.Connect(ctx, servers)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	leaseB, err := zkrecipes.NewMutex(b, path).Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("B holds the lock, token %d; write: %v\n", leaseB.Token(), store.write(leaseB.Token(), "B1"))

	// A wakes up and, still believing it holds the lock, writes.
	late := store.write(tokenA, "A2")
	fmt.Printf("A wakes up and writes with token %d: %v\n", tokenA, late)
	fmt.Printf("A's lease, had it looked: %v\n", leaseA.Err())
	fmt.Printf("stored value: %q\n", store.value)
	if err := leaseB.Release(ctx); err != nil {
		log.Fatal(err)
	}
	if !errors.Is(late, errStale) || store.value != "B1" {
		log.Fatal("the stale write was not refused")
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
