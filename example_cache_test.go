package zkrecipes_test

import (
	"context"
	"log"

	"github.com/zkrecipes/zkrecipes"
)

// A configuration node applied now and after every change; a missing
// node is reported with a nil stat, and watched until it appears.
func ExampleWatchData() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	err = zkrecipes.WatchData(ctx, session, "/config/app", func(data []byte, stat *zkrecipes.NodeStat) error {
		if stat == nil {
			log.Print("no configuration yet")
			return nil
		}
		log.Printf("configuration version %d: %s", stat.Version, data)
		return nil // a non-nil error stops the watch and is returned
	})
	log.Print(err) // ctx's error once cancelled
}

// A local copy of one node, read without a round trip, with its changes
// as events.
func ExampleNodeCache() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	cache := zkrecipes.NewNodeCache(session, "/config/app")
	if err := cache.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer cache.Close(context.Background())
	if n, ok := cache.Get(); ok {
		log.Printf("loaded %s (czxid %d)", n.Data, n.Stat.Czxid)
	}
	for ev := range cache.Events() { // closed by Close
		switch ev.Kind {
		case zkrecipes.NodeCreated, zkrecipes.NodeChanged:
			log.Printf("%v: %s (mzxid %d)", ev.Kind, ev.Node.Data, ev.Node.Stat.Mzxid)
		case zkrecipes.NodeDeleted:
			log.Print("deleted")
		case zkrecipes.CacheSuspended:
			log.Print("connection lost: the copy may be stale")
		}
	}
}

// A local copy of a whole tree (a configuration, say): read without a
// round trip, with every creation, change and deletion below the root as
// events.
func ExampleTreeCache() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	cache := zkrecipes.NewTreeCache(session, "/config")
	if err := cache.Start(ctx); err != nil { // the tree is loaded once Start returns
		log.Fatal(err)
	}
	defer cache.Close(context.Background())
	if n, ok := cache.Get("/config/db/url"); ok {
		log.Printf("db url %s", n.Data)
	}
	kids, _ := cache.Children("/config")
	log.Printf("sections: %v", kids)
	for ev := range cache.Events() { // closed by Close
		switch ev.Kind {
		case zkrecipes.NodeCreated, zkrecipes.NodeChanged:
			log.Printf("%v %s = %s", ev.Kind, ev.Node.Path, ev.Node.Data)
		case zkrecipes.NodeDeleted:
			log.Printf("%s deleted", ev.Node.Path)
		case zkrecipes.CacheInitialized:
			log.Printf("loaded %d nodes", cache.Len())
		}
	}
}
