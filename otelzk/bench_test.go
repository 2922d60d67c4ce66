package otelzk_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/otelzk"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// The cost of the adapter on the lock: the same workloads on Sessions
// without an Observer (off), with otelzk recording metrics on the SDK and
// a no-op TracerProvider (metrics), and with otelzk on the metrics and
// trace SDKs (otel: every acquisition and request span sampled and
// exported to a no-op exporter), interleaved in one run against one
// server.
//
//	go test -run '^$' -bench Lock -count 5 .
func BenchmarkLock(b *testing.B) {
	c := server(b)
	for _, mode := range []string{"off", "metrics", "otel"} {
		b.Run("uncontended/"+mode, func(b *testing.B) {
			s := benchSession(b, c.Servers(), mode)
			m := zr.NewMutex(s, benchPath(b), zr.WithName("bench"))
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				l, err := m.Acquire(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("contended8/"+mode, func(b *testing.B) {
			const sessions = 8
			path := benchPath(b)
			var ms []*zr.Mutex
			for range sessions {
				ms = append(ms, zr.NewMutex(benchSession(b, c.Servers(), mode), path, zr.WithName("bench")))
			}
			var left atomic.Int64
			left.Store(int64(b.N))
			var wg sync.WaitGroup
			errs := make(chan error, sessions)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			b.ReportAllocs()
			b.ResetTimer()
			for _, m := range ms {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for left.Add(-1) >= 0 {
						l, err := m.Acquire(ctx)
						if err == nil {
							err = l.Release(ctx)
						}
						if err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
		})
	}
}

// benchObserver is otelzk on the metrics SDK and a no-op TracerProvider
// (metrics), or on the metrics and trace SDKs, every span sampled and
// exported to a no-op exporter (otel).
func benchObserver(b *testing.B, mode string) *otelzk.Observer {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	var tp trace.TracerProvider = tracenoop.NewTracerProvider()
	if mode == "otel" {
		tp = sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()),
			sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(tracetest.NewNoopExporter())))
	}
	obs, err := otelzk.New(otelzk.WithMeterProvider(mp), otelzk.WithTracerProvider(tp))
	if err != nil {
		b.Fatal(err)
	}
	return obs
}

var benchSeq atomic.Int64

func benchPath(b *testing.B) string {
	return fmt.Sprintf("/otelbench/%s-%d", unsafe.ReplaceAllString(b.Name(), "_"), benchSeq.Add(1))
}

// benchSession is a Session without an Observer (off), or with otelzk on
// the metrics SDK (metrics) or on the metrics and trace SDKs (otel).
func benchSession(b *testing.B, servers []string, mode string) *zr.Session {
	b.Helper()
	opts := []zr.SessionOption{zr.WithSessionTimeout(10 * time.Second)}
	if mode != "off" {
		opts = append(opts, zr.WithObserver(benchObserver(b, mode)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := zr.Connect(ctx, servers, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}
