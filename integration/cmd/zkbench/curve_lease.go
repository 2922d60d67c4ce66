package main

import (
	"context"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/integration/bench"
)

// The lease curve: n leases held on one session (bench.HeldLeases), for
// zkrecipes' Mutex, go-zookeeper's zk.Lock and Apache Curator's
// InterProcessMutex (in a JVM of its own: its heap and threads are the
// JVM's).

// leaseKinds are the holders of the lease curve.
var leaseKinds = []string{bench.LeasesZkrecipes, bench.LeasesGozk, bench.LeasesCurator}

// LeasePoint is a lease point: Size leases held on one session, what they
// cost, and the session's recovery from a connection drop and from a
// server restart. Times and costs are the medians of the runs; the times
// to be whole are the medians of the runs that were whole again within
// bench.LeaseRecoveryWait (the others are counted in *NotWhole); the lost
// leases are summed over the runs.
type LeasePoint struct {
	Acquire         time.Duration `json:"acquire_ns"`
	AcquirePerLease time.Duration `json:"acquire_per_lease_ns"`
	// HeapPerLease and GoroutinesPerLease are, for Curator, its JVM's live
	// objects' bytes and its threads (bench.HeldLeasesResult).
	HeapPerLease       float64 `json:"heap_bytes_per_lease"`
	GoroutinesPerLease float64 `json:"goroutines_per_lease"`
	// WatchesAdded is the growth of the server's watch count while held.
	WatchesAdded float64 `json:"watches_added"`
	// The drop: every connection reset by the proxy.
	DropBack     time.Duration `json:"drop_back_ns"`
	DropWhole    time.Duration `json:"drop_whole_ns,omitempty"`
	DropNotWhole int           `json:"drop_not_whole"`
	DropLost     int           `json:"drop_lost"`
	// DropBytes is the bytes the server read from its clients until whole.
	DropBytes float64 `json:"drop_bytes_received,omitempty"`
	// The restart of the server, in Restarts of the runs; RestartServer is
	// the server's own time from its kill to serving.
	Restarts        int           `json:"restarts"`
	RestartServer   time.Duration `json:"restart_server_ns,omitempty"`
	RestartBack     time.Duration `json:"restart_back_ns,omitempty"`
	RestartWhole    time.Duration `json:"restart_whole_ns,omitempty"`
	RestartNotWhole int           `json:"restart_not_whole"`
	RestartLost     int           `json:"restart_lost"`
}

// lease measures n leases held on one session: each kind once per
// repetition, in an order rotating with the repetition. A kind that fails
// at n is not run at n again; its point records why. Each run restarts
// the server (when cc.restart is set), after which the Meter is made
// again: the server is another process.
func (cr *curveRun) lease(ctx context.Context, n int) error {
	runs := map[string][]bench.HeldLeasesResult{}
	failed := map[string]error{}
	for rep := range cr.cc.Reps {
		for _, kind := range rotate(leaseKinds, rep) {
			if failed[kind] != nil {
				continue
			}
			p := fmt.Sprintf("/zkbench/curves/lease%d/r%d/%s", n, rep, kind)
			lctx, cancel := context.WithTimeout(ctx, 5*time.Minute+time.Duration(n)*3*time.Millisecond)
			r, err := bench.HeldLeases(lctx, cr.env, cr.cc.restart, kind, p, n)
			cancel()
			if cr.cc.restart != nil {
				if m, merr := bench.NewMeter(ctx, cr.env.Servers...); merr == nil {
					cr.env.Meter = m
				}
			}
			if err != nil {
				failed[kind] = err
				logf("  curve lease %d: %s failed: %s", n, kind, oneLine(err.Error(), 300))
				continue
			}
			runs[kind] = append(runs[kind], r)
			logf("  curve lease %d: %-9s acquired in %v (%v/lease), %.0f heap B and %.4f goroutines (JVM: threads)/lease, %d watches; %s; %s",
				n, kind, r.Acquire.Round(time.Millisecond), r.Acquire/time.Duration(n), r.HeapPerLease, r.GoroutinesPerLease, r.Watches,
				recoveryLog("drop", &r.Drop), recoveryLog("restart", r.Restart))
		}
	}
	for _, kind := range leaseKinds {
		cr.points = append(cr.points, leasePoint(kind, n, runs[kind], failed[kind]))
	}
	return cr.write()
}

func recoveryLog(what string, r *bench.Recovery) string {
	if r == nil {
		return what + " not run"
	}
	whole := "not whole"
	if r.Whole > 0 {
		whole = "whole in " + r.Whole.Round(time.Millisecond).String()
	}
	return fmt.Sprintf("%s: server %v, back in %v (same session %t), %s (%d watches, %d bytes received), %d lost", what,
		r.Server.Round(time.Millisecond), r.Back.Round(time.Millisecond), r.SameSession, whole, r.Watches, r.BytesReceived, r.Lost)
}

// leasePoint aggregates the runs of kind at n leases; err is the failure
// of a run that did not finish, if any.
func leasePoint(kind string, n int, runs []bench.HeldLeasesResult, err error) CurvePoint {
	p := CurvePoint{Curve: curveLease, Size: n, Impl: kind, Runs: len(runs), Error: errText(err)}
	if len(runs) == 0 {
		return p
	}
	lp := &LeasePoint{
		Acquire:            medD(runs, func(r bench.HeldLeasesResult) time.Duration { return r.Acquire }),
		HeapPerLease:       med(runs, func(r bench.HeldLeasesResult) float64 { return r.HeapPerLease }),
		GoroutinesPerLease: med(runs, func(r bench.HeldLeasesResult) float64 { return r.GoroutinesPerLease }),
		WatchesAdded:       med(runs, func(r bench.HeldLeasesResult) float64 { return float64(r.Watches) }),
		DropBack:           medD(runs, func(r bench.HeldLeasesResult) time.Duration { return r.Drop.Back }),
	}
	lp.AcquirePerLease = lp.Acquire / time.Duration(n)
	var drops, restarts []bench.Recovery
	for _, r := range runs {
		drops = append(drops, r.Drop)
		if r.Restart != nil {
			restarts = append(restarts, *r.Restart)
		}
	}
	var whole []bench.Recovery
	lp.DropWhole, lp.DropNotWhole, lp.DropLost, whole = recoveries(drops)
	if len(whole) > 0 {
		lp.DropBytes = med(whole, func(r bench.Recovery) float64 { return float64(r.BytesReceived) })
	}
	if lp.Restarts = len(restarts); lp.Restarts > 0 {
		lp.RestartServer = medD(restarts, func(r bench.Recovery) time.Duration { return r.Server })
		lp.RestartBack = medD(restarts, func(r bench.Recovery) time.Duration { return r.Back })
		lp.RestartWhole, lp.RestartNotWhole, lp.RestartLost, _ = recoveries(restarts)
	}
	p.LeasePoint = lp
	return p
}

// recoveries returns the median time to be whole of the recoveries that
// were whole again, how many were not, the leases lost in all of them, and
// the whole ones.
func recoveries(rs []bench.Recovery) (whole time.Duration, notWhole, lost int, wholeOnes []bench.Recovery) {
	for _, r := range rs {
		lost += r.Lost
		if r.Whole > 0 {
			wholeOnes = append(wholeOnes, r)
		} else {
			notWhole++
		}
	}
	if len(wholeOnes) > 0 {
		whole = medD(wholeOnes, func(r bench.Recovery) time.Duration { return r.Whole })
	}
	return whole, notWhole, lost, wholeOnes
}

// leaseTable is the lease curve's table in curves.md.
func leaseTable() curveTable {
	return curveTable{curveLease,
		"Leases held on one session (medians; lost: summed over the runs; whole: connected again under the same session, every watch re-set; a restart's times from the server's kill; Curator's heap and threads are its JVM's, the heap its live objects by its class histogram):",
		"| leases | implementation | runs | acquire s | µs/lease | heap B/lease | goroutines (JVM: threads)/lease | server watches | drop: back / whole s | drop: lost | restart: server / back / whole s | restart: lost |",
		func(p CurvePoint) (string, bool) {
			l := p.LeasePoint
			if l == nil {
				return "", false
			}
			restart, restartLost := "not run", "–"
			if l.Restarts > 0 {
				restart = fmt.Sprintf("%s / %s / %s", secs(l.RestartServer), secs(l.RestartBack), wholeCell(l.RestartWhole, l.RestartNotWhole))
				restartLost = fmt.Sprint(l.RestartLost)
			}
			return fmt.Sprintf("%d | %s | %.0f | %.0f | %.4f | %.0f | %s / %s | %d | %s | %s |", p.Runs, secs(l.Acquire),
				float64(l.AcquirePerLease)/float64(time.Microsecond), l.HeapPerLease, l.GoroutinesPerLease, l.WatchesAdded,
				secs(l.DropBack), wholeCell(l.DropWhole, l.DropNotWhole), l.DropLost, restart, restartLost), true
		}}
}

// wholeCell is a time to be whole, and the runs that were not.
func wholeCell(whole time.Duration, notWhole int) string {
	switch {
	case notWhole == 0:
		return secs(whole)
	case whole == 0:
		return fmt.Sprintf("**not whole** (%d)", notWhole)
	}
	return fmt.Sprintf("%s, **not whole** in %d", secs(whole), notWhole)
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()) }

// leaseChart is the lease curve's chart, curve-lease.png.
func leaseChart() curveChart {
	lease := func(f func(*LeasePoint) (float64, bool)) func(CurvePoint) (float64, bool) {
		return func(p CurvePoint) (float64, bool) {
			if p.LeasePoint == nil {
				return 0, false
			}
			return f(p.LeasePoint)
		}
	}
	return curveChart{curveLease, "curve-lease.png", "leases held on one session", []curvePanel{
		panel("Acquisition per lease", "µs (50 goroutines; lower is better)", lease(func(l *LeasePoint) (float64, bool) {
			return float64(l.AcquirePerLease) / float64(time.Microsecond), true
		})),
		panel("Heap per held lease", "bytes (live heap after a GC; Curator: its JVM's)", lease(func(l *LeasePoint) (float64, bool) { return l.HeapPerLease, true })),
		panel("Server watches per held lease", "zk_watch_count added / lease", func(p CurvePoint) (float64, bool) {
			if p.LeasePoint == nil {
				return 0, false
			}
			return p.WatchesAdded / float64(p.Size), true
		}),
		panel("Whole again after a connection drop", "s (lower is better)", lease(func(l *LeasePoint) (float64, bool) {
			return l.DropWhole.Seconds(), l.DropWhole > 0
		})),
		panel("Whole again after a server restart", "s from the kill (the server's restart included)", lease(func(l *LeasePoint) (float64, bool) {
			return l.RestartWhole.Seconds(), l.RestartWhole > 0
		})),
	}}
}
