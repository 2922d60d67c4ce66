package zkrecipes

import (
	"context"
	"sync"
)

// Subscribe returns a channel that receives every connection state change
// from now on, in order, until ctx ends or the Session is closed; then the
// channel is closed (at once, after the Session's Close). Changes are
// queued without bound for a slow reader (a state change is never
// dropped, and the Session never blocks on a subscriber): end ctx when
// done reading. A reader that sees the channel closed without a
// StateClosed change, while ctx has not ended, knows the Session closed
// under it. It fails only with ErrInvalidArgument for a nil ctx.
func (s *Session) Subscribe(ctx context.Context) (<-chan StateChange, error) {
	if ctx == nil {
		return nil, invalidArg("nil context")
	}
	ch, _ := s.subscribeUntil(ctx)
	return ch, nil
}

// subscribe is Subscribe for the recipes: it returns the channel and the
// function that ends the subscription.
func (s *Session) subscribe() (<-chan StateChange, func()) {
	return s.subscribeUntil(context.Background())
}

// subscribeUntil subscribes until ctx ends, cancel is called or the
// Session closes. Whichever comes first unhooks ctx, so that nothing of
// the subscription outlives it (an AfterFunc on a ctx the context package
// does not know holds a goroutine until it is stopped).
func (s *Session) subscribeUntil(ctx context.Context) (<-chan StateChange, func()) {
	sub := &subscriber{out: make(chan StateChange), wake: make(chan struct{}, 1), stop: make(chan struct{})}
	cancel := func() {
		s.mu.Lock()
		if _, ok := s.subs[sub]; ok {
			delete(s.subs, sub)
			sub.cancel()
		}
		s.mu.Unlock()
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		close(sub.out)
		return sub.out, func() {}
	}
	s.subs[sub] = struct{}{}
	unhook := context.AfterFunc(ctx, cancel) // cancel waits for s.mu on its own goroutine
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		defer unhook()
		sub.run()
	}()
	return sub.out, cancel
}

// subscriber forwards queued state changes to its channel on its own
// goroutine, so that a slow reader never blocks the Session.
type subscriber struct {
	mu      sync.Mutex
	pending []StateChange
	out     chan StateChange
	wake    chan struct{}
	stop    chan struct{} // cancel: stop at once
	once    sync.Once
}

func (u *subscriber) push(c StateChange) {
	u.mu.Lock()
	u.pending = append(u.pending, c)
	u.mu.Unlock()
	u.signal()
}

func (u *subscriber) cancel() { u.once.Do(func() { close(u.stop) }) }

func (u *subscriber) signal() {
	select {
	case u.wake <- struct{}{}:
	default:
	}
}

func (u *subscriber) run() {
	defer close(u.out)
	for {
		u.mu.Lock()
		batch := u.pending
		u.pending = nil
		u.mu.Unlock()
		for _, c := range batch {
			select {
			case u.out <- c:
			case <-u.stop:
				return
			}
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-u.wake:
		case <-u.stop:
			return
		}
	}
}
