package zkrecipes_test

import (
	"context"
	"errors"
	"log"
	"time"

	"github.com/zkrecipes/zkrecipes"
)

// Readers share a read-write lock; a writer excludes them all, and
// readers that come after a waiting writer queue behind it.
func ExampleRWMutex() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	rw := zkrecipes.NewRWMutex(session, "/locks/catalog")

	read, err := rw.ReadLock().Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	log.Print("reading the catalog") // beside other readers
	if err := read.Release(ctx); err != nil {
		log.Print(err)
	}

	write, err := rw.WriteLock().Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer write.Release(context.Background())
	log.Print("rebuilding the catalog") // alone
}

// Limit how many processes run a job at once: each holds one of three
// leases; Acquire(ctx, n) takes n at once, or none.
func ExampleSemaphore() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	sem := zkrecipes.NewSemaphore(session, "/limits/exports", 3)
	leases, err := sem.Acquire(ctx, 1)
	if errors.Is(err, context.DeadlineExceeded) {
		log.Fatalf("no free slot in time: %v", err) // names the path
	}
	if err != nil {
		log.Fatal(err)
	}
	defer leases[0].Release(context.Background())
	log.Printf("exporting in a slot, token %d", leases[0].Token())
}

// Two resources locked together, all or nothing: the lease is lost when
// either member is. Every process takes the members in the same order.
func ExampleMultiLock() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	both := zkrecipes.NewMultiLock(
		zkrecipes.NewMutex(session, "/locks/accounts/alice"),
		zkrecipes.NewMutex(session, "/locks/accounts/bob"),
	)
	lease, err := both.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Release(context.Background())
	log.Printf("transferring under %d locks", len(lease.Members()))
}
