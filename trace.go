package zkrecipes

import (
	"context"
	"time"
)

// Tracer observes every ZooKeeper operation a Session's recipes issue, like
// Curator's TracerDriver. TraceOp is called after each reply or failure,
// from any goroutine: it must be safe for concurrent use, must not block,
// and must not use the Session's recipes (a lock taken there would belong
// to a goroutine the Session reuses).
//
// Deprecated: use an Observer (WithObserver): its OpDone sees the same
// operations with the caller's ctx, and it sees what the recipes do
// besides. WithTracer is an adapter on it.
type Tracer interface {
	TraceOp(TraceEvent)
}

// TraceEvent describes one ZooKeeper operation.
//
// Deprecated: use an Observer's OpEvent, as for Tracer.
type TraceEvent struct {
	Op        string        // "create", "delete", "getData", "getChildren", "exists", "multi", ...
	Path      string        // the absolute ZooKeeper path (namespace included)
	Latency   time.Duration // from send to reply
	Err       error         // nil on success
	SessionID int64         // the session the operation was sent on
}

// TracerFunc adapts a function to the Tracer interface.
//
// Deprecated: use an Observer (WithObserver), as for Tracer.
type TracerFunc func(TraceEvent)

// TraceOp calls f(ev).
func (f TracerFunc) TraceOp(ev TraceEvent) { f(ev) }

// tracerObserver returns o (a BaseObserver when nil) with its OpDone
// reporting to t too: WithTracer is an adapter on the Session's Observer,
// the one path events take inside the library.
func tracerObserver(o Observer, t Tracer) Observer {
	if o == nil {
		o = BaseObserver{}
	}
	return tracing{Observer: o, t: t}
}

type tracing struct {
	Observer
	t Tracer
}

// OpDone reports ev to the Tracer, with its absolute path, then to the
// Observer.
func (tr tracing) OpDone(ctx context.Context, ev OpEvent) {
	tr.t.TraceOp(TraceEvent{Op: ev.Op, Path: ev.abs, Latency: ev.Latency, Err: ev.Err, SessionID: ev.SessionID})
	tr.Observer.OpDone(ctx, ev)
}

// userObserver is the Observer given with WithObserver (nil: none) within
// obs, the Session's, which a Tracer's adapter may wrap.
func userObserver(obs Observer) Observer {
	tr, ok := obs.(tracing)
	if !ok {
		return obs
	}
	if _, none := tr.Observer.(BaseObserver); none {
		return nil
	}
	return tr.Observer
}

// traceOnly reports ev, which is not a request (the clean-up of an
// abandoned create), to the Session's Tracer, if any: an Observer has no
// hook for it.
func (s *Session) traceOnly(ev TraceEvent) {
	if tr, ok := s.cfg.obs.(tracing); ok {
		tr.t.TraceOp(ev)
	}
}
