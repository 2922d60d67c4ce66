package zkrecipes_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/zkrecipes/zkrecipes"
)

// A limit that operators change at runtime (from Curator, from zkr count
// set, or from Go), followed by every process.
func ExampleSharedCount_Watch() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	limit := zkrecipes.NewSharedCount(session, "/config/max-workers", 4)
	err = limit.Watch(ctx, func(v zkrecipes.VersionedCount) {
		fmt.Println("max workers:", v.Count) // the latest value; intermediate ones may be skipped
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
}

// Raising a count only if nobody changed it since it was read.
func ExampleSharedCount_TrySet() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	c := zkrecipes.NewSharedCount(session, "/config/max-workers", 4)
	for {
		v, err := c.Get(ctx)
		if err != nil {
			log.Fatal(err)
		}
		_, err = c.TrySet(ctx, v.Count*2, v.Version)
		if errors.Is(err, zkrecipes.ErrVersionChanged) {
			continue // someone else wrote first: read again
		}
		if err != nil {
			log.Fatal(err)
		}
		return
	}
}

// A counter shared with Curator's DistributedAtomicLong.
func ExampleAtomicCounter() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	orders := zkrecipes.NewAtomicCounter(session, "/counters/orders",
		zkrecipes.WithPromotedLock("/counters/orders-lock")) // after 3 lost races, take a lock
	r, err := orders.Increment(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("order number", r.PostValue)
}

// Changing a shared value only from the version read: a write that lost
// the race reads again and retries, so no change is overwritten.
func ExampleSharedValue() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	banner := zkrecipes.NewSharedValue(session, "/config/banner", []byte("welcome"))
	for {
		v, err := banner.Get(ctx)
		if err != nil {
			log.Fatal(err)
		}
		next := append(v.Value, '!')
		_, err = banner.TrySet(ctx, next, v.Version)
		if errors.Is(err, zkrecipes.ErrVersionChanged) {
			continue // someone wrote in between: read again
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("banner is now %q\n", next)
		return
	}
}
