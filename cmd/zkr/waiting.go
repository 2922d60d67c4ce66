package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/zkrecipes/zkrecipes"
)

// waiting is what the commands that wait share (zkr lock, zkr elect): the
// signals they stop on or forward, a context the first of those signals
// cancels while they wait, and the Session.
type waiting struct {
	ctx    context.Context
	cancel context.CancelFunc
	sigs   chan os.Signal
	s      *zkrecipes.Session
}

// startWaiting installs the signal handler and connects; a signal
// interrupts the connect. Call close when done, also after an error.
func (c *common) startWaiting(policy zkrecipes.LossPolicy) (*waiting, error) {
	w := &waiting{sigs: make(chan os.Signal, 4)}
	signal.Notify(w.sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	w.ctx, w.cancel = context.WithCancel(context.Background())
	s, err := interruptible(w.ctx, w.cancel, w.sigs, func(ctx context.Context) (*zkrecipes.Session, error) {
		return c.connect(ctx, zkrecipes.WithLossPolicy(policy))
	})
	w.s = s
	return w, err
}

// close closes the Session, if any, stops the signal handler and cancels
// the context.
func (w *waiting) close() {
	if w.s != nil {
		w.s.Close()
	}
	signal.Stop(w.sigs)
	w.cancel()
}
