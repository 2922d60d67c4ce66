package zkrecipes_test

import (
	"context"
	"log"
	"sync/atomic"

	"github.com/zkrecipes/zkrecipes"
)

// lossCounter is an Observer that counts the leases lost, by cause: embed
// BaseObserver and implement only what you need. (The otelzk module is the
// full OpenTelemetry one.)
type lossCounter struct {
	zkrecipes.BaseObserver
	expired, suspended atomic.Int64
}

func (c *lossCounter) LeaseEnd(_ context.Context, ev zkrecipes.LeaseEndEvent) {
	switch ev.Cause {
	case zkrecipes.EndExpired:
		c.expired.Add(1)
	case zkrecipes.EndSuspended:
		c.suspended.Add(1)
	}
}

func ExampleWithObserver() {
	ctx := context.Background()
	losses := &lossCounter{}
	s, err := zkrecipes.Connect(ctx, []string{"127.0.0.1:2181"},
		zkrecipes.WithObserver(losses),
		// Lock paths are per entity: report them under a few names.
		zkrecipes.WithPathNames(func(path string) string { return "orders" }))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	lease, err := zkrecipes.NewMutex(s, "/locks/order-1234").Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	<-lease.Done()
	log.Printf("lost: %v (expired so far: %d)", lease.Err(), losses.expired.Load())
}
