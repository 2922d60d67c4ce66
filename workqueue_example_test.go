package zkrecipes_test

import (
	"context"
	"log"

	"github.com/zkrecipes/zkrecipes"
)

// A worker takes a job under a lock, works under the item's context (which
// ends if the lock is lost), records the result only if the job is still
// its own, then acks it; on failure it releases the job back to the queue
// for another worker. A Curator DistributedQueue built with the lock path
// "/queues/render-locks" shares the same queue.
func ExampleWorkQueue() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	jobs := zkrecipes.NewWorkQueue(session, "/queues/render", zkrecipes.WithLockPath("/queues/render-locks"))
	if err := jobs.Put(ctx, []byte("scene-7")); err != nil {
		log.Fatal(err)
	}
	item, err := jobs.Take(ctx) // waits for a job no other worker holds
	if err != nil {
		log.Fatal(err)
	}
	work, cancel := item.Context(ctx)
	result, err := render(work, item.Data())
	cancel()
	if err != nil {
		_ = item.Release(ctx) // back to the queue, for another worker
		return
	}
	// Fenced: refused if another worker has taken the job since.
	if _, err := session.Multi(ctx, item.Check(), zkrecipes.CreateOp("/results/scene-7", result)); err != nil {
		log.Print(err)
	}
	if err := item.Ack(ctx); err != nil {
		log.Print(err)
	}
}

func render(ctx context.Context, job []byte) ([]byte, error) {
	return append([]byte("rendered "), job...), ctx.Err()
}
