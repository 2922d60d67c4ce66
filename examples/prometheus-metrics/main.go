// Command prometheus-metrics is a small service that holds locks,
// campaigns for leadership and caches a config tree on ZooKeeper, observed
// by otelzk, and serves the metrics at /metrics through OpenTelemetry's
// Prometheus exporter. Scrape it while it runs: lock waits and holds,
// ZooKeeper request latency, leadership changes, cache syncs and the
// Session's state move as it works.
//
//	ZK_SERVERS=127.0.0.1:2181 go run . -listen 127.0.0.1:9464
//	curl -s 127.0.0.1:9464/metrics | grep ^zookeeper_
//
// It is a module of its own (it needs the OpenTelemetry SDK and the
// Prometheus client, which the zkrecipes module does not).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/otelzk"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

func main() {
	log.SetFlags(0)
	var cfg config
	flag.StringVar(&cfg.listen, "listen", "127.0.0.1:9464", "address to serve /metrics on (loopback)")
	flag.StringVar(&cfg.root, "root", "/examples/prometheus-metrics", "ZooKeeper path under which the service works")
	flag.IntVar(&cfg.workers, "workers", 3, "goroutines contending for the job lock")
	flag.Parse()
	cfg.servers = strings.Split(envOr("ZK_SERVERS", "127.0.0.1:2181"), ",")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("serving http://%s/metrics", ln.Addr())
	if err := run(ctx, cfg, ln); err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
}

type config struct {
	servers []string
	listen  string
	root    string
	workers int
	// session are more options for the Session (a test's dialer).
	session []zr.SessionOption
}

// run serves /metrics on ln and works until ctx ends.
func run(ctx context.Context, cfg config, ln net.Listener) error {
	// OpenTelemetry metrics, exported to a Prometheus registry of our own.
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	obs, err := otelzk.New(otelzk.WithMeterProvider(mp))
	if err != nil {
		return err
	}

	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Close() }()

	// Lock paths are per entity in a real service: name them, so that no
	// metric carries a raw path.
	names := func(p string) string {
		switch rest := strings.TrimPrefix(p, cfg.root); {
		case strings.HasPrefix(rest, "/jobs"):
			return "job-lock"
		case strings.HasPrefix(rest, "/leader"):
			return "scheduler"
		case strings.HasPrefix(rest, "/config"):
			return "config"
		}
		return "other"
	}
	opts := append([]zr.SessionOption{zr.WithObserver(obs), zr.WithPathNames(names)}, cfg.session...)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	s, err := zr.Connect(cctx, cfg.servers, opts...)
	cancel()
	if err != nil {
		return err
	}
	defer s.Close()

	// The config tree, cached.
	if err := ensure(ctx, s, cfg.root+"/config/feature-a"); err != nil {
		return err
	}
	cache := zr.NewTreeCache(s, cfg.root+"/config")
	defer func() { _ = cache.Close(context.Background()) }()
	if err := cache.Start(ctx); err != nil {
		return err
	}
	go func() {
		for range cache.Events() {
		}
	}()

	var wg sync.WaitGroup
	defer wg.Wait()
	// Leadership: campaign again whenever it ends (lost, say).
	wg.Add(1)
	go func() {
		defer wg.Done()
		e := zr.NewElection(s, cfg.root+"/leader")
		for ctx.Err() == nil {
			err := e.Run(ctx, func(ctx context.Context, _ *zr.Lease) error {
				<-ctx.Done()
				return nil
			}, zr.WithRequeue(true))
			if ctx.Err() == nil {
				log.Printf("election: %v; campaigning again", err)
				pause(ctx.Done(), 100*time.Millisecond)
			}
		}
	}()
	// Workers take per-job locks, contending for a few hot jobs.
	for i := range cfg.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				job := fmt.Sprintf("%s/jobs/job-%d", cfg.root, rand.IntN(2))
				l, err := zr.NewMutex(s, job).Acquire(ctx)
				if err != nil {
					if ctx.Err() == nil {
						log.Printf("worker %d: %v", i, err)
						pause(ctx.Done(), 100*time.Millisecond)
					}
					continue
				}
				pause(l.Done(), 20*time.Millisecond) // the work, cut short if the lock is lost
				_ = l.Release(context.Background())
			}
		}()
	}
	<-ctx.Done()
	return ctx.Err()
}

// pause waits for d, or until done closes.
func pause(done <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// ensure creates path and its parents if missing.
func ensure(ctx context.Context, s *zr.Session, path string) error {
	p := ""
	for _, part := range strings.Split(strings.Trim(path, "/"), "/") {
		p += "/" + part
		if _, err := s.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return ctx.Err()
}

func envOr(k, d string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return d
}
