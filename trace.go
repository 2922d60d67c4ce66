package zkrecipes

import "time"

// Tracer observes every ZooKeeper operation a Session's recipes issue, like
// Curator's TracerDriver. TraceOp is called after each reply or failure,
// from any goroutine: it must be safe for concurrent use, must not block,
// and must not use the Session's recipes (a lock taken there would belong
// to a goroutine the Session reuses). An Observer (WithObserver) sees the
// same operations with the caller's ctx, and what the recipes do besides.
type Tracer interface {
	TraceOp(TraceEvent)
}

// TraceEvent describes one ZooKeeper operation.
type TraceEvent struct {
	Op        string        // "create", "delete", "getData", "getChildren", "exists", "multi", ...
	Path      string        // the absolute ZooKeeper path (namespace included)
	Latency   time.Duration // from send to reply
	Err       error         // nil on success
	SessionID int64         // the session the operation was sent on
}

// TracerFunc adapts a function to the Tracer interface.
type TracerFunc func(TraceEvent)

// TraceOp calls f(ev).
func (f TracerFunc) TraceOp(ev TraceEvent) { f(ev) }
