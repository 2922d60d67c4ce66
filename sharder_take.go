package zkrecipes

// QueueSharder.Take: a take from every shard in turn, on the queues'
// take loop (takeLoop).

import (
	"context"
	"reflect"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"
)

// Take takes an item from any shard, as WorkQueue.Take takes one from a
// queue: the first unheld item of a shard, locked, waiting while every
// shard is empty or held (on watches, for every shard, and for the shards
// the sharder learns of meanwhile). Shards are tried in turn, a different
// one first at each Take, so that no shard starves; within a shard items
// come in the shard's order. The WorkItem is its shard's: Ack or Release
// it as any other. Take fails as WorkQueue.Take does, with
// ErrSharderNotStarted before Start, and ErrClosed after, or during,
// Close.
func (sh *QueueSharder) Take(ctx context.Context) (*WorkItem, error) {
	if ctx == nil && sh.err == nil {
		return nil, invalidArg("nil context")
	}
	if err := sh.state(); err != nil {
		return nil, err
	}
	return takeLoop(ctx, sh.s, func(watching bool) takeRound[*WorkItem] {
		return sh.round(ctx, watching)
	})
}

// round is one round of Take's takeLoop over every shard, in turn: the
// first shard's item it can take, or the first retryable failure, or, when
// every shard had nothing, what to wait for (every shard's watches, the
// first due time, a new shard).
func (sh *QueueSharder) round(ctx context.Context, watching bool) takeRound[*WorkItem] {
	var r takeRound[*WorkItem]
	if err := sh.state(); err != nil { // Close since the last round
		return r.done(nil, err)
	}
	qs, changed := sh.inTurn()
	w := &sharderWait{changed: changed}
	r.wait = func(ctx context.Context) error { return w.await(ctx, sh) }
	again := false
	for _, q := range qs {
		qr := q.round(ctx, watching)
		r.listed = r.listed || qr.listed
		switch {
		case qr.step == takeDone:
			return r.done(qr.v, qr.err)
		case qr.err != nil:
			r.err = qr.err
			return r
		case qr.step == takeAgain:
			again = true
		}
		w.add(qr.watch, qr.also, qr.due)
	}
	if again {
		r.step = takeAgain
	}
	return r
}

// inTurn returns the shards, starting from the next one in turn, and the
// channel closed when shards are learnt.
func (sh *QueueSharder) inTurn() ([]*WorkQueue, <-chan struct{}) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	names := make([]string, 0, len(sh.shards))
	for name := range sh.shards {
		names = append(names, name)
	}
	slices.Sort(names)
	first := int(sh.next.Add(1)) % max(len(names), 1)
	qs := make([]*WorkQueue, 0, len(names))
	for i := range names {
		qs = append(qs, sh.shards[names[(first+i)%len(names)]])
	}
	return qs, sh.changed
}

// sharderWait is what a Take waits for when no shard had an item: a
// watch of each shard (and of its locks), the first due time, new shards.
type sharderWait struct {
	chans   []<-chan zk.Event
	due     time.Time
	changed <-chan struct{}
}

func (w *sharderWait) add(watch, also <-chan zk.Event, due time.Time) {
	for _, c := range []<-chan zk.Event{watch, also} {
		if c != nil {
			w.chans = append(w.chans, c)
		}
	}
	if !due.IsZero() && (w.due.IsZero() || due.Before(w.due)) {
		w.due = due
	}
}

// await waits for any of w's wake-ups, ctx, the sharder's Close or the
// Session's.
func (w *sharderWait) await(ctx context.Context, sh *QueueSharder) error {
	cases := []reflect.SelectCase{
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(sh.closing)},
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(sh.s.closedCh)},
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w.changed)},
	}
	if !w.due.IsZero() {
		t := time.NewTimer(time.Until(w.due))
		defer t.Stop()
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(t.C)})
	}
	for _, c := range w.chans {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c)})
	}
	switch i, _, _ := reflect.Select(cases); i {
	case 0:
		return ctx.Err()
	case 1, 2:
		return ErrClosed
	}
	return nil
}
