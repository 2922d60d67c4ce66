package zkrecipes_test

import (
	"context"
	"errors"
	"log"

	"github.com/zkrecipes/zkrecipes"
)

// Every change under a subtree, with one watch on the server that stays
// set; after a reconnection the reader is told it may have missed some,
// and falls back to one-shot watches where persistent ones are not to be
// had (ZooKeeper before 3.6).
func ExamplePersistentWatch() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	w := zkrecipes.NewPersistentWatch(session, "/app/jobs", zkrecipes.WithRecursive(true))
	if err := w.Start(ctx); errors.Is(err, zkrecipes.ErrPersistentWatchUnsupported) {
		log.Print("no persistent watches here: use a TreeCache")
		return
	} else if err != nil {
		log.Fatal(err)
	}
	defer w.Close(context.Background()) // removes the watch from the server
	for ev := range w.Events() {        // closed by Close
		switch ev.Kind {
		case zkrecipes.WatchReset:
			log.Printf("watch set again (%v): read the tree again, changes may have been missed", ev.Reset)
		default:
			log.Printf("%v %s", ev.Kind, ev.Path)
		}
	}
}
