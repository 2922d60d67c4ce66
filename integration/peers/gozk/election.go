package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	zr "github.com/zkrecipes/zkrecipes"
)

// latch campaigns in Curator's LeaderLatch layout until the duration ends:
// each term logs LEAD, leads for --hold-ms (or until leadership is lost),
// logs UNLEAD and resigns, like the Curator peer's latch mode.
func (p *peer) latch(ctx context.Context, s *zr.Session) error {
	e := zr.NewElection(s, p.opt.path, zr.WithParticipantID(p.opt.id))
	return p.holdLoop(ctx, e.Campaign, "LEAD", "UNLEAD", func(*zr.Lease) error { return e.Resign(context.Background()) })
}

// selector runs a term function in Curator's LeaderSelector layout with
// requeue until the duration ends, like the Curator peer's selector mode;
// the latencies are the leadership times.
func (p *peer) selector(ctx context.Context, s *zr.Session) error {
	e := zr.NewElection(s, p.opt.path, zr.WithParticipantID(p.opt.id), zr.WithLayout(zr.SelectorLayout))
	var mu sync.Mutex
	var logErr error
	err := e.Run(ctx, func(fctx context.Context, l *zr.Lease) error {
		t := time.Now()
		mu.Lock()
		p.acquired++
		mu.Unlock()
		if err := p.writeLog(fmt.Sprintf("LEAD %s %d", p.opt.id, l.Token())); err != nil {
			return err
		}
		hold := time.NewTimer(time.Duration(p.opt.holdMs) * time.Millisecond)
		select {
		case <-hold.C:
		case <-fctx.Done():
		}
		hold.Stop()
		if err := l.Err(); err != nil && ctx.Err() == nil {
			mu.Lock()
			logErr = fmt.Errorf("leadership lost while held: %w", err)
			mu.Unlock()
		}
		err := p.writeLog("UNLEAD " + p.opt.id)
		mu.Lock()
		p.latencies = append(p.latencies, time.Since(t))
		mu.Unlock()
		return err
	}, zr.WithRequeue(true))
	mu.Lock()
	defer mu.Unlock()
	if logErr != nil {
		return logErr
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}
