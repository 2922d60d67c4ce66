package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	zr "github.com/zkrecipes/zkrecipes"
)

// WorkQueueResult is one run of the work queue workload: consumers, each
// its own session, take (under the item's lock) and ack items put
// beforehand until the queue is empty.
type WorkQueueResult struct {
	Consumers int           `json:"consumers"`
	Items     int           `json:"items"`
	Total     time.Duration `json:"total_ns"` // from the start to the last ack
	// PerSecond is items consumed per second.
	PerSecond float64 `json:"items_per_s"`
	// ReqPerItem is the packets the server received per item consumed,
	// BytesPerItem its response bytes.
	ReqPerItem   float64 `json:"requests_per_item"`
	BytesPerItem float64 `json:"response_bytes_per_item"`
}

// WorkQueueLockPath is the lock path of the work queue at path, as
// zkrecipes' WorkQueue makes it by default and as the Curator peer is
// given it.
func WorkQueueLockPath(path string) string { return path + "-locks" }

// FillWorkQueue puts n items of 16 bytes on the work queue at path, in
// Curator's DistributedQueue layout (one node each), with one session of
// its own, unmeasured.
func FillWorkQueue(ctx context.Context, env Env, path string, n int) error {
	s, err := zr.Connect(ctx, env.ServerFor(0), zr.WithSessionTimeout(SessionTimeout), zr.WithDialer(LoopbackDialer))
	if err != nil {
		return err
	}
	defer s.Close()
	q := zr.NewWorkQueue(s, path)
	item := []byte("0123456789abcdef")
	for i := range n {
		if err := q.Put(ctx, item); err != nil {
			return fmt.Errorf("bench: put item %d on %s: %w", i, path, err)
		}
	}
	return nil
}

// WorkQueueConsume measures zkrecipes' WorkQueue: it opens consumers
// sessions on the work queue at path, which holds items items
// (FillWorkQueue), reads the server's counters, and lets each consumer
// take and ack items until all are consumed.
func WorkQueueConsume(ctx context.Context, env Env, path string, items, consumers int) (WorkQueueResult, error) {
	var sessions []*zr.Session
	defer func() {
		for _, s := range sessions {
			_ = s.Close()
		}
	}()
	for i := range consumers {
		s, err := zr.Connect(ctx, env.ServerFor(i), zr.WithSessionTimeout(SessionTimeout), zr.WithDialer(LoopbackDialer))
		if err != nil {
			return WorkQueueResult{}, err
		}
		sessions = append(sessions, s)
	}
	before, err := env.Meter.Read(ctx)
	if err != nil {
		return WorkQueueResult{}, err
	}
	// Consumers stop once every item is acked; a Take then waiting on the
	// empty queue is cancelled.
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		done     atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		last     time.Time
	)
	start := time.Now()
	for _, s := range sessions {
		q := zr.NewWorkQueue(s, path)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rctx.Err() == nil {
				wi, err := q.Take(rctx)
				if err == nil {
					err = wi.Ack(ctx)
				}
				if err != nil {
					if rctx.Err() == nil {
						mu.Lock()
						firstErr = errors.Join(firstErr, err)
						mu.Unlock()
						cancel()
					}
					return
				}
				if done.Add(1) == int64(items) {
					mu.Lock()
					last = time.Now()
					mu.Unlock()
					cancel()
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return WorkQueueResult{}, firstErr
	}
	if n := done.Load(); n != int64(items) {
		return WorkQueueResult{}, fmt.Errorf("bench: %d of %d work items consumed: %w", n, items, ctx.Err())
	}
	d, err := env.Meter.Delta(ctx, before)
	if err != nil {
		return WorkQueueResult{}, err
	}
	return NewWorkQueueResult(consumers, items, last.Sub(start), d), nil
}

// NewWorkQueueResult derives a run's rates from its time and the server's
// counters over it.
func NewWorkQueueResult(consumers, items int, total time.Duration, d Counters) WorkQueueResult {
	return WorkQueueResult{
		Consumers: consumers, Items: items, Total: total,
		PerSecond:    float64(items) / total.Seconds(),
		ReqPerItem:   float64(d.PacketsReceived) / float64(items),
		BytesPerItem: float64(d.ResponseBytes) / float64(items),
	}
}
