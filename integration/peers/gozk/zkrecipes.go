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
	ctx, cancel := context.WithDeadline(context.Background(), p.deadline)
	defer cancel()
	s, err := zr.Connect(ctx, strings.Split(p.opt.servers, ","),
		zr.WithSessionTimeout(p.opt.sessionTimeout), zr.WithDialer(loopbackDialer))
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("could not connect to %s within %v", p.opt.servers, p.opt.duration)
	}
	if err != nil {
		return err
	}
	defer s.Close()
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
	for {
		t0 := time.Now()
		l, err := m.Acquire(ctx)
		if errors.Is(err, context.DeadlineExceeded) {
			return nil
		}
		if err != nil {
			return err
		}
		p.latencies = append(p.latencies, time.Since(t0))
		p.acquired++
		if err := p.writeLog(fmt.Sprintf("ENTER %s %d", p.opt.id, l.Token())); err != nil {
			return err
		}
		time.Sleep(time.Duration(p.opt.holdMs) * time.Millisecond)
		if l.Err() != nil {
			// Ownership ended while holding: say so before leaving.
			return fmt.Errorf("lost while holding: %w", l.Err())
		}
		if err := p.writeLog("EXIT " + p.opt.id); err != nil {
			return err
		}
		if err := l.Release(context.Background()); err != nil {
			return fmt.Errorf("release: %w", err)
		}
	}
}
