package otelzk_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/otelzk"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// spanPath is a request span's zookeeper.recipe.path (WithRawPaths).
func spanPath(s sdktrace.ReadOnlySpan) string {
	for _, kv := range s.Attributes() {
		if kv.Key == otelzk.AttrRecipePath {
			return kv.Value.AsString()
		}
	}
	return ""
}

// A contended acquisition's wait-loop requests (the watch on the holder's
// node, sent on a worker, not on the caller's goroutine) are spans under
// the acquisition's span, for the fast handoff (a Mutex) and the plain one
// (a write lock).
func TestWaitLoopRequestsAreSpansUnderTheAcquisition(t *testing.T) {
	c := server(t)
	for _, tc := range []struct {
		kind string
		lock func(s *zr.Session, path string) interface {
			Acquire(context.Context) (*zr.Lease, error)
		}
	}{
		{zr.KindMutex, func(s *zr.Session, path string) interface {
			Acquire(context.Context) (*zr.Lease, error)
		} {
			return zr.NewMutex(s, path)
		}},
		{zr.KindWriteLock, func(s *zr.Session, path string) interface {
			Acquire(context.Context) (*zr.Lease, error)
		} {
			return zr.NewRWMutex(s, path).WriteLock()
		}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			r := newRigWith(t, c, nil, []otelzk.Option{otelzk.WithRawPaths()})
			other := newRig(t, c, nil)
			path := testPath(t)
			held, err := tc.lock(other.Session, path).Acquire(ctxT(t, 10*time.Second))
			require.NoError(t, err)

			ctx, parent := r.tp.Tracer("test").Start(ctxT(t, 20*time.Second), "handle")
			got := make(chan error, 1)
			var lease *zr.Lease
			go func() {
				var err error
				lease, err = tc.lock(r.Session, path).Acquire(ctx)
				got <- err
			}()
			require.Eventually(t, func() bool { return r.sum(t, "zookeeper.lock.waiters") == 1 }, 10*time.Second, 5*time.Millisecond)
			// The waiter has set its watch on the holder's node once a
			// request on that node has been recorded.
			require.Eventually(t, func() bool {
				n, _ := r.hist(t, "zookeeper.client.operation.duration")
				return n >= 3
			}, 10*time.Second, 5*time.Millisecond)
			require.NoError(t, held.Release(ctxT(t, 10*time.Second)))
			require.NoError(t, <-got)
			require.NoError(t, lease.Release(ctx))
			parent.End()

			acq := r.ended("zkrecipes.acquire " + tc.kind)
			require.Len(t, acq, 1)
			var onHolder []sdktrace.ReadOnlySpan
			for _, s := range r.spans.Ended() {
				if spanPath(s) == held.Path() {
					onHolder = append(onHolder, s)
				}
			}
			require.NotEmpty(t, onHolder, "the waiter's watch on the holder's node is a span")
			for _, s := range onHolder {
				require.Equal(t, acq[0].SpanContext().SpanID(), s.Parent().SpanID(), "%s on the holder's node is under the acquisition", s.Name())
				require.Equal(t, acq[0].SpanContext().TraceID(), s.SpanContext().TraceID())
			}
		})
	}
}

// A waiter with another waiter between it and the holder watches that
// waiter's node twice (its data and its deletion: the marked release's
// watches); both requests, sent on workers, are spans under its
// acquisition's span.
func TestMarkedReleaseWatchesAreSpansUnderTheAcquisition(t *testing.T) {
	c := server(t)
	r := newRigWith(t, c, nil, []otelzk.Option{otelzk.WithRawPaths()})
	holderS, middleS := newRig(t, c, nil), newRig(t, c, nil)
	path := testPath(t)
	held, err := zr.NewMutex(holderS.Session, path).Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)

	middle := make(chan string, 1)
	middleErr := make(chan error, 1)
	go func() {
		l, err := zr.NewMutex(middleS.Session, path).Acquire(ctxT(t, 20*time.Second))
		if err == nil {
			middle <- l.Path()
			err = l.Release(context.Background()) // it waited: a marked release
		}
		middleErr <- err
	}()
	// The middle waiter's node is queued (the waiters gauge counts from
	// before the create: on a busy machine the third node could come first).
	qctx := ctxT(t, 10*time.Second) // a listing that hangs ends with the wait
	require.Eventually(t, func() bool {
		kids, _, err := holderS.Session.GetChildren(qctx, path)
		return err == nil && len(kids) == 2
	}, 10*time.Second, 5*time.Millisecond)

	ctx, parent := r.tp.Tracer("test").Start(ctxT(t, 20*time.Second), "handle")
	got := make(chan error, 1)
	var lease *zr.Lease
	go func() {
		var err error
		lease, err = zr.NewMutex(r.Session, path).Acquire(ctx)
		got <- err
	}()
	require.Eventually(t, func() bool { return r.sum(t, "zookeeper.lock.waiters") == 1 }, 10*time.Second, 5*time.Millisecond)
	// Its two watches on the middle node are recorded before the holder
	// lets go (the create, the listing, then the watches).
	require.Eventually(t, func() bool {
		n, _ := r.hist(t, "zookeeper.client.operation.duration", otelzk.AttrOperation.String("getData"))
		return n >= 1
	}, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, held.Release(ctxT(t, 10*time.Second)))
	var mid string
	select {
	case mid = <-middle:
	case err := <-middleErr:
		t.Fatalf("the middle waiter did not hold: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the middle waiter did not hold")
	}
	require.NoError(t, <-middleErr)
	require.NoError(t, <-got)
	require.NoError(t, lease.Release(ctx))
	parent.End()

	acq := r.ended("zkrecipes.acquire mutex")
	require.Len(t, acq, 1)
	ops := map[string]bool{}
	for _, s := range r.spans.Ended() {
		if spanPath(s) != mid {
			continue
		}
		ops[s.Name()] = true
		require.Equal(t, acq[0].SpanContext().SpanID(), s.Parent().SpanID(), "%s on the middle node is under the acquisition", s.Name())
	}
	require.True(t, ops["zookeeper getData"] && ops["zookeeper getChildren"], "both watches on the middle node are spans: %v", ops)
}
