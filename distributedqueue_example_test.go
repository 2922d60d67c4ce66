package zkrecipes_test

import (
	"context"
	"errors"
	"log"

	"github.com/zkrecipes/zkrecipes"
)

// A worker takes jobs one at a time; a job returned with ErrTakeUncertain
// (its take's reply was lost) may also have gone to another worker, so a
// worker that must not run a job twice checks it before it runs it.
func ExampleQueue() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	jobs := zkrecipes.NewQueue(session, "/queues/thumbnails")
	if err := jobs.Offer(ctx, []byte("photo-42.jpg")); err != nil {
		log.Fatal(err)
	}
	for {
		job, err := jobs.Take(ctx) // waits for a job
		switch {
		case errors.Is(err, zkrecipes.ErrTakeUncertain):
			runOnce(job) // at-least-once: another worker may have it too
		case err != nil:
			log.Fatal(err)
		default:
			run(job)
		}
	}
}

func run(job []byte)     { log.Printf("thumbnail for %s", job) }
func runOnce(job []byte) { log.Printf("thumbnail for %s, unless already made", job) }
