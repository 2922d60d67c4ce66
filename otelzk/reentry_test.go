package otelzk_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/otelzk"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// spanAttr is a span's attribute k, "" without it.
func spanAttr(s sdktrace.ReadOnlySpan, k string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == k {
			return kv.Value.AsString()
		}
	}
	return ""
}

// A reentrant acquisition is counted as such, with no wait and no second
// lease held; the hold ends once.
func TestReentrantAcquireIsCountedWithNoWait(t *testing.T) {
	r := newRig(t, server(t), nil)
	m := zr.NewMutex(r.Session, testPath(t))
	ctx := ctxT(t, 10*time.Second)
	l1, err := m.Acquire(ctx)
	require.NoError(t, err)
	l2, err := m.Acquire(ctx)
	require.NoError(t, err)
	reentrant := otelzk.AttrAcquireMode.String("reentrant")
	require.EqualValues(t, 1, r.sum(t, "zookeeper.lock.acquisitions", kindMutex, reentrant))
	require.EqualValues(t, 2, r.sum(t, "zookeeper.lock.acquisitions", kindMutex))
	n, _ := r.hist(t, "zookeeper.lock.wait.duration", kindMutex)
	require.EqualValues(t, 1, n, "a reentrant acquisition records no wait")
	require.EqualValues(t, 1, r.sum(t, "zookeeper.lease.held", kindMutex), "one hold")
	require.EqualValues(t, 0, r.sum(t, "zookeeper.lock.waiters", kindMutex))
	acq := r.ended("zkrecipes.acquire mutex")
	require.Len(t, acq, 2)
	require.Equal(t, "reentrant", spanAttr(acq[1], string(otelzk.AttrAcquireMode)))

	require.NoError(t, l2.Release(ctx))
	require.NoError(t, l1.Release(ctx))
	require.EqualValues(t, 0, r.sum(t, "zookeeper.lease.held", kindMutex))
	n, _ = r.hist(t, "zookeeper.lock.hold.duration", kindMutex, released)
	require.EqualValues(t, 1, n, "the hold ends once")
}

// The holder of a write lock that takes the read lock (a downgrade) is
// counted as a read acquisition, with a span marked downgrade that its
// requests hang under, and its read lease's end is recorded.
func TestDowngradedReadLeaseIsReported(t *testing.T) {
	r := newRig(t, server(t), nil)
	rw := zr.NewRWMutex(r.Session, testPath(t), zr.WithName("doc"))
	ctx := ctxT(t, 10*time.Second)
	w, err := rw.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	rl, err := rw.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	read := otelzk.AttrRecipeKind.String(zr.KindReadLock)
	require.EqualValues(t, 1, r.sum(t, "zookeeper.lock.acquisitions", read))
	require.EqualValues(t, 1, r.sum(t, "zookeeper.lease.held", read))
	acq := r.ended("zkrecipes.acquire " + zr.KindReadLock)
	require.Len(t, acq, 1)
	require.Equal(t, "downgrade", spanAttr(acq[0], string(otelzk.AttrAcquireMode)))
	var under int
	for _, s := range r.spans.Ended() {
		if s.Parent().SpanID() == acq[0].SpanContext().SpanID() {
			under++
		}
	}
	require.NotZero(t, under, "the downgrade's requests are spans under it")

	require.NoError(t, w.Release(ctx))
	require.NoError(t, rl.Release(ctx))
	require.EqualValues(t, 0, r.sum(t, "zookeeper.lease.held", read))
	n, _ := r.hist(t, "zookeeper.lock.hold.duration", read, released)
	require.EqualValues(t, 1, n)
}
