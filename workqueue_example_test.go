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

// Jobs put with an id can be called off: Remove deletes those no worker
// has taken yet and says how many. A worker sees the id of what it took.
// Curator's DistributedIdQueue on the same paths puts and removes the
// same way.
func ExampleWorkQueue_Remove() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	jobs := zkrecipes.NewWorkQueue(session, "/queues/render")
	for _, scene := range []string{"scene-7", "scene-8"} {
		if err := jobs.Put(ctx, []byte(scene), zkrecipes.WithID("film-42")); err != nil {
			log.Fatal(err)
		}
	}
	n, err := jobs.Remove(ctx, "film-42") // the film is cancelled
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("called off %d jobs; any a worker holds are left to it", n)
}
