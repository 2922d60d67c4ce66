package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	zr "github.com/zkrecipes/zkrecipes"
)

// runZkrecipes runs the peer's mode on a zkrecipes Mutex.
func (p *peer) runZkrecipes() error {
	cctx, cancel := context.WithDeadline(context.Background(), p.deadline)
	s, err := zr.Connect(cctx, strings.Split(p.opt.servers, ","),
		zr.WithSessionTimeout(p.opt.sessionTimeout), zr.WithDialer(loopbackDialer))
	cancel()
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("could not connect to %s within %v", p.opt.servers, p.opt.duration)
	}
	if err != nil {
		return err
	}
	defer s.Close()
	p.connected()
	ctx, cancel := context.WithDeadline(context.Background(), p.deadline)
	defer cancel()
	switch p.opt.mode {
	case "latch":
		return p.latch(ctx, s)
	case "selector":
		return p.selector(ctx, s)
	}
	m := zr.NewMutex(s, p.opt.path)
	if p.opt.mode == "bench-uncontended" {
		for i := range p.opt.count {
			t0 := time.Now()
			l, err := m.Acquire(ctx)
			if err != nil {
				return fmt.Errorf("cycle %d of %d: %w", i, p.opt.count, err)
			}
			if err := l.Release(ctx); err != nil {
				return err
			}
			p.latencies = append(p.latencies, time.Since(t0))
			p.acquired++
		}
		p.extra["cycles"] = p.opt.count
		return nil
	}
	return p.holdLoop(ctx, m.Acquire, "ENTER", "EXIT", func(l *zr.Lease) error { return l.Release(context.Background()) })
}

// holdLoop acquires until the duration ends: each time it logs enter with
// the lease's token, holds for --hold-ms (failing if ownership ends
// meanwhile), logs exit and gives the lease back with release.
func (p *peer) holdLoop(ctx context.Context, acquire func(context.Context) (*zr.Lease, error), enter, exit string, release func(*zr.Lease) error) error {
	for {
		t0 := time.Now()
		l, err := acquire(ctx)
		if errors.Is(err, context.DeadlineExceeded) {
			return nil
		}
		if err != nil {
			return err
		}
		p.latencies = append(p.latencies, time.Since(t0))
		p.acquired++
		if err := p.writeLog(fmt.Sprintf("%s %s %d", enter, p.opt.id, l.Token())); err != nil {
			return err
		}
		hold := time.NewTimer(time.Duration(p.opt.holdMs) * time.Millisecond)
		select {
		case <-hold.C:
		case <-l.Done():
		}
		hold.Stop()
		lostErr := l.Err()
		if err := p.writeLog(exit + " " + p.opt.id); err != nil {
			return err
		}
		if lostErr != nil {
			// Ownership ended while holding: say so before leaving.
			return fmt.Errorf("lost while holding: %w", lostErr)
		}
		if err := release(l); err != nil {
			return fmt.Errorf("release: %w", err)
		}
	}
}
