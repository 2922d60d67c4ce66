package wire

import "sync/atomic"

// counts are the process's counts of the ways the layer took around a
// server's or go-zookeeper's limits: tests read them (Counts) to tell
// which way ran against which server.
var counts struct {
	typedRemovals, anyRemovals, reArms atomic.Int64
	resumeFallbacks                    atomic.Int64
}

// Counts is a snapshot, over every Layer of the process, of the ways the
// layer took: how persistent watches were removed and set again, and how
// often a resumed connection's replies waited for SetWatches until the
// read deadline.
type Counts struct {
	// TypedRemovals: persistent watches removed by their watcher type
	// (servers 3.9 and later).
	TypedRemovals int64
	// AnyRemovals: persistent watches removed with every watch of the
	// connection on their path, then the others put back (servers 3.6 to
	// 3.8, which answer the typed removal with CodeMarshalling).
	AnyRemovals int64
	// ReArms: persistent watches set again behind a request of
	// go-zookeeper's that sets a watch on their path, or its SetWatches
	// (servers 3.6 to 3.8, and any server until the probe answered).
	ReArms int64
	// ResumeFallbacks: resumed connections whose replies waited for
	// go-zookeeper's SetWatches until the read deadline, then passed
	// (resume.go). Zero unless go-zookeeper never wrote a SetWatches the
	// layer expected.
	ResumeFallbacks int64
}

// ReadCounts returns the process's counts so far.
func ReadCounts() Counts {
	return Counts{
		TypedRemovals:   counts.typedRemovals.Load(),
		AnyRemovals:     counts.anyRemovals.Load(),
		ReArms:          counts.reArms.Load(),
		ResumeFallbacks: counts.resumeFallbacks.Load(),
	}
}
