package zkrecipes

import "sync/atomic"

// A Session runs every request that must not block its caller (a send, a
// call whose context can end, a background clean-up) on a goroutine the
// Session counts. Starting a goroutine per request is cheap, but each new
// goroutine's stack starts small and is grown, frame by frame copied, in
// go-zookeeper's request path: in a contended acquisition that cost as much
// CPU as the rest of the recipe. A goroutine that finishes its task waits
// for the next one instead, until the Session closes; at most maxIdle
// wait at a time, the rest end.
//
// Tasks are the Session's own code (requests, clean-ups), never a user's
// callback: a worker's goroutine id, which reentrancy is keyed on, carries
// over from one task to the next.

// maxIdleWorkers bounds the goroutines of one Session that wait for a task.
const maxIdleWorkers = 16

// workers hands tasks to idle worker goroutines.
type workers struct {
	tasks chan func() // unbuffered: a send succeeds only into a waiting worker
	idle  atomic.Int32
}

// startLocked runs fn on an idle worker, or on a new one. The caller holds
// s.opsMu (read) and has seen the Session open, so Close waits for it.
func (s *Session) startLocked(fn func()) {
	select {
	case s.workers.tasks <- fn:
		return
	default:
	}
	s.wg.Add(1)
	go s.work(fn)
}

// work runs fn, then the tasks handed to it, until the Session closes or
// enough other workers wait.
func (s *Session) work(fn func()) {
	defer s.wg.Done()
	for {
		fn()
		fn = nil // nothing of the last task stays reachable while idle
		if s.workers.idle.Add(1) > maxIdleWorkers {
			s.workers.idle.Add(-1)
			return
		}
		select {
		case fn = <-s.workers.tasks:
			s.workers.idle.Add(-1)
		case <-s.closedCh:
			s.workers.idle.Add(-1)
			return
		}
	}
}
