package zkrecipes_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/zkrecipes/zkrecipes"
)

// GzipCompress writes what Curator's GzipCompressionProvider writes, and
// GzipDecompress reads it back; data that is not gzip is a typed error.
func ExampleGzipCompress() {
	gz := zkrecipes.GzipCompress([]byte("feature=on"))
	fmt.Printf("% x\n", gz[:4])
	data, err := zkrecipes.GzipDecompress(gz)
	fmt.Println(string(data), err)
	_, err = zkrecipes.GzipDecompress([]byte("feature=on"))
	fmt.Println(errors.Is(err, zkrecipes.ErrNotCompressed))
	// Output:
	// 1f 8b 08 00
	// feature=on <nil>
	// true
}

// A SharedValue and a cache that store and read their data compressed, as
// Curator's compressed() writes and decompressed() reads it.
func ExampleWithCompression() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers(), zkrecipes.WithCompression(true))
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	cfg := zkrecipes.NewSharedValue(session, "/config/features", nil)
	if _, err := cfg.Set(ctx, []byte(`{"checkout":true}`)); err != nil {
		log.Fatal(err)
	}
	cache := zkrecipes.NewNodeCache(session, "/config/features")
	if err := cache.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer cache.Close(context.Background())
	if n, ok := cache.Get(); ok {
		fmt.Println(string(n.Data))
	}
}

// A node that stays while this process runs, and expires a minute after it
// dies: Curator's PersistentTtlNode layout.
func ExamplePersistentTtlNode() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	node := zkrecipes.NewPersistentTtlNode(session, "/workers/w1", time.Minute, []byte("host-a:8080"))
	err = node.Start(ctx) // returns once the node is in place
	if errors.Is(err, zkrecipes.ErrTTLUnsupported) {
		log.Fatal("run the servers with -Dzookeeper.extendedTypesEnabled=true")
	} else if err != nil {
		log.Fatal(err)
	}
	defer node.Close(context.Background())
}
