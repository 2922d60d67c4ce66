// Command service-discovery shows two Go HTTP services finding each other
// through ZooKeeper, in the layout and JSON of Curator's
// curator-x-discovery: two "greeter" instances register themselves under
// /examples/services, and a "frontend" (its own session, as a separate
// process would have) follows them with a Provider and calls them in
// turn. One greeter then stops, and the frontend stops choosing it.
//
// A Java service using Curator's ServiceDiscovery on the same base path
// finds the greeters too (ServiceDiscoveryBuilder.builder(Map.class)
// .basePath("/examples/services")), and `zkr services --base
// /examples/services` lists them.
//
//	ZK_SERVERS=127.0.0.1:2181 go run ./examples/service-discovery
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/discovery"
)

const base = "/examples/services"

func main() {
	log.SetFlags(0)
	servers := strings.Split(envOr("ZK_SERVERS", "127.0.0.1:2181"), ",")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// Two greeters, each an HTTP server with its own session and
	// registration.
	var greeters []*greeter
	for _, id := range []string{"greeter-1", "greeter-2"} {
		g, err := startGreeter(ctx, servers, id)
		if err != nil {
			log.Fatal(err)
		}
		defer g.stop()
		greeters = append(greeters, g)
	}

	// The frontend finds them.
	s, err := zkrecipes.Connect(ctx, servers)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	provider := discovery.New(s, base).NewProvider("greeter")
	defer provider.Close(context.Background())
	if err := provider.Start(ctx); err != nil {
		log.Fatal(err)
	}
	call := func() {
		inst, err := provider.Instance()
		if err != nil {
			fmt.Println("frontend:", err)
			return
		}
		uri, _ := inst.URI(nil)
		resp, err := http.Get(uri + "hello")
		if err != nil {
			provider.NoteError(inst) // twice, and it is left out for 30 s
			fmt.Printf("frontend: %s failed: %v\n", inst.ID, err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("frontend: %s -> %s", uri, body)
	}
	for i := 0; i < 4; i++ {
		call()
	}

	// greeter-1 stops: it unregisters, and the frontend's cache follows.
	greeters[0].stop()
	for {
		all, changed := provider.All() // one read: no change is missed
		if !strings.Contains(ids(all), "greeter-1") {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			log.Fatal(ctx.Err())
		}
	}
	all, _ := provider.All()
	fmt.Println("frontend: greeter-1 left; instances now:", ids(all))
	for i := 0; i < 2; i++ {
		call()
	}
}

// greeter is one instance of the greeter service.
type greeter struct {
	srv *http.Server
	s   *zkrecipes.Session
	d   *discovery.ServiceDiscovery
}

func startGreeter(ctx context.Context, servers []string, id string) (*greeter, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintf(w, "hello from %s\n", id) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()

	s, err := zkrecipes.Connect(ctx, servers)
	if err != nil {
		srv.Close()
		return nil, err
	}
	d := discovery.New(s, base)
	port := ln.Addr().(*net.TCPAddr).Port
	err = d.Register(ctx, discovery.Instance{Name: "greeter", ID: id, Address: "127.0.0.1", Port: port,
		URISpec: "{scheme}://{address}:{port}/", Payload: json.RawMessage(`{"version":"1"}`)})
	if err != nil {
		s.Close()
		srv.Close()
		return nil, err
	}
	fmt.Printf("%s: serving on 127.0.0.1:%d, registered\n", id, port)
	return &greeter{srv: srv, s: s, d: d}, nil
}

// stop unregisters the greeter, then stops serving. It is idempotent.
func (g *greeter) stop() {
	if g.s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = g.d.Close(ctx)
	g.s.Close()
	g.srv.Close()
	g.s = nil
}

func ids(in []discovery.Instance) string {
	var out []string
	for _, i := range in {
		out = append(out, i.ID)
	}
	return strings.Join(out, ",")
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
