#!/usr/bin/python3
"""A kazoo peer for the zkrecipes interoperability tests.

Run it with Debian's /usr/bin/python3 (python3-kazoo). One subcommand per
recipe; each appends its acquisitions to a shared log (one O_APPEND write per
line) and prints one JSON summary line on stdout. See README.md.
"""

import argparse
import json
import math
import os
import re
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.exceptions import LockTimeout

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_WATCHDOG = 3

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m)?$")


def parse_duration(text):
    """Parse "500ms", "4s", "1.5s", "2m" or a bare number of seconds."""
    m = _DURATION.match(text)
    if not m:
        raise argparse.ArgumentTypeError("bad duration %r" % text)
    value = float(m.group(1))
    unit = m.group(2) or "s"
    return value / 1000.0 if unit == "ms" else value * 60.0 if unit == "m" else value


class Peer:
    """One contender: a client, a recipe, a shared log and the counters."""

    def __init__(self, args):
        self.args = args
        # When the work ends: args.duration after the client connected (a
        # busy machine may take seconds to start Python and connect). Until
        # then it bounds the connecting.
        self.deadline = time.monotonic() + args.duration
        self.ident = args.id or "kazoo-%d" % os.getpid()
        self.log_fd = None
        if args.log:
            self.log_fd = os.open(args.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.acquisitions = 0
        self.errors = 0
        self.latencies_ns = []
        self.extra = {}
        self.client = None

    def remaining(self):
        return self.deadline - time.monotonic()

    def log(self, line):
        if self.log_fd is None:
            return
        data = ("%s %d\n" % (line, time.time_ns())).encode("utf-8")
        os.write(self.log_fd, data)  # one write(2) per line, O_APPEND

    def connect(self):
        self.client = KazooClient(
            hosts=self.args.servers,
            timeout=self.args.session_timeout_ms / 1000.0,
        )
        try:
            self.client.start(timeout=max(0.1, self.remaining()))
        except KazooTimeoutError:
            self.client.close()
            raise RuntimeError(
                "could not connect to %s within %s s" % (self.args.servers, self.args.duration)
            )
        self.deadline = time.monotonic() + self.args.duration

    def close(self):
        if self.client is not None:
            try:
                self.client.stop()
            finally:
                self.client.close()

    def hold(self):
        if self.args.hold_ms > 0:
            time.sleep(self.args.hold_ms / 1000.0)

    def make_lock(self):
        a = self.args
        if a.mode == "read":
            return self.client.ReadLock(a.path, self.ident)
        if a.mode == "write":
            return self.client.WriteLock(a.path, self.ident)
        extra = [a.extra_lock_pattern] if a.extra_lock_pattern else []
        return self.client.Lock(a.path, self.ident, extra_lock_patterns=extra)

    def loop(self):
        enter, exit_ = ("RENTER", "REXIT") if self.args.mode == "read" else ("ENTER", "EXIT")
        while self.remaining() > 0:
            lock = self.make_lock()
            t0 = time.monotonic_ns()
            try:
                got = lock.acquire(timeout=max(0.001, self.remaining()))
            except LockTimeout:
                got = False
            if not got:
                break
            self.latencies_ns.append(time.monotonic_ns() - t0)
            self.acquisitions += 1
            try:
                self.log("%s %s %s" % (enter, self.ident, token(lock.node)))
                self.hold()
                self.log("%s %s" % (exit_, self.ident))
            finally:
                lock.release()

    def bench_uncontended(self):
        lock = self.make_lock()
        for i in range(self.args.count):
            if self.remaining() <= 0:
                raise RuntimeError("duration ended after %d of %d cycles" % (i, self.args.count))
            t0 = time.monotonic_ns()
            if not lock.acquire(timeout=max(0.001, self.remaining())):
                raise RuntimeError("uncontended acquire timed out")
            lock.release()
            self.latencies_ns.append(time.monotonic_ns() - t0)
            self.acquisitions += 1
        self.extra["cycles"] = self.args.count

    def run(self):
        self.connect()
        try:
            if self.args.mode == "bench-uncontended":
                self.bench_uncontended()
            else:
                self.loop()
        finally:
            self.close()

    def summary(self):
        lat = sorted(self.latencies_ns)
        out = {
            "peer": "kazoo",
            "mode": self.args.mode,
            "id": self.ident,
            "acquisitions": self.acquisitions,
            "errors": self.errors,
            "samples": len(lat),
            "p50_us": percentile_us(lat, 0.50),
            "p99_us": percentile_us(lat, 0.99),
            "max_us": lat[-1] // 1000 if lat else 0,
        }
        out.update(self.extra)
        return json.dumps(out, separators=(",", ":"))


class BenchPeer:
    """The synchronised benchmark modes (--sync, and bench-drain), driven by
    the zkbench runner through stdin: after its set-up the peer prints
    "READY <id>" and waits for a line on stdin, runs the measured phase,
    prints its JSON summary, and waits for the end of stdin before closing
    its sessions. Every session is its own KazooClient."""

    def __init__(self, args):
        self.args = args
        self.ident = args.id or "kazoo-%d" % os.getpid()
        self.clients = []
        self.log_fd = None
        if args.log:
            self.log_fd = os.open(args.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def log(self, line):
        if self.log_fd is not None:
            os.write(self.log_fd, ("%s %d\n" % (line, time.time_ns())).encode("utf-8"))

    def connect(self, n):
        # The k-th session of the run (k from 0) is given server k mod the
        # count of --servers, as zkbench places its own.
        hosts = self.args.servers.split(",")
        fresh = []
        for _ in range(n):
            host = hosts[len(self.clients) % len(hosts)]
            c = KazooClient(hosts=host, timeout=self.args.session_timeout_ms / 1000.0)
            c.start(timeout=60)
            fresh.append(c)
            self.clients.append(c)
        return fresh

    def lock(self, client):
        extra = [self.args.extra_lock_pattern] if self.args.extra_lock_pattern else []
        return client.Lock(self.args.path, self.ident, extra_lock_patterns=extra)

    def ready_and_wait(self):
        sys.stdout.write("READY %s\n" % self.ident)
        sys.stdout.flush()
        if not sys.stdin.readline():
            raise RuntimeError("stdin closed before the start line")

    def summary(self, acquisitions, lat_ns, **extra):
        lat = sorted(lat_ns)
        out = {
            "peer": "kazoo", "mode": self.args.mode, "id": self.ident,
            "acquisitions": acquisitions, "errors": 0, "samples": len(lat),
            "p50_us": percentile_us(lat, 0.50), "p99_us": percentile_us(lat, 0.99),
            "max_us": lat[-1] // 1000 if lat else 0,
            "p50_ns": percentile_us(lat, 0.50) * 1000 if lat else 0,
            "p99_ns": percentile_us(lat, 0.99) * 1000 if lat else 0,
        }
        if lat:
            out["p50_ns"] = lat[max(0, min(len(lat) - 1, math.ceil(0.50 * len(lat)) - 1))]
            out["p99_ns"] = lat[max(0, min(len(lat) - 1, math.ceil(0.99 * len(lat)) - 1))]
        out.update(extra)
        sys.stdout.write(json.dumps(out, separators=(",", ":")) + "\n")
        sys.stdout.flush()

    def uncontended(self):
        (client,) = self.connect(1)
        lock = self.lock(client)
        for _ in range(self.args.warmup):
            lock.acquire()
            lock.release()
        self.ready_and_wait()
        lat = []
        for _ in range(self.args.count):
            t0 = time.monotonic_ns()
            lock.acquire()
            lock.release()
            lat.append(time.monotonic_ns() - t0)
        self.summary(self.args.count, lat, cycles=self.args.count)

    def contended(self):
        clients = self.connect(self.args.sessions)
        self.ready_and_wait()
        deadline = time.monotonic() + self.args.duration
        counts = [0] * len(clients)
        waits = []
        failures = []

        def contender(k, client):
            lock = self.lock(client)
            who = "%s-%d" % (self.ident, k)
            try:
                while True:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return
                    t0 = time.monotonic_ns()
                    try:
                        if not lock.acquire(timeout=left):
                            return
                    except LockTimeout:
                        return
                    waits.append(time.monotonic_ns() - t0)
                    counts[k] += 1
                    try:
                        self.log("ENTER %s -" % who)
                        if self.args.hold_us > 0:
                            time.sleep(self.args.hold_us / 1e6)
                        self.log("EXIT %s" % who)
                    finally:
                        lock.release()
            except Exception as e:  # reported after the join
                failures.append(e)

        threads = [threading.Thread(target=contender, args=(k, c)) for k, c in enumerate(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if failures:
            raise failures[0]
        self.summary(sum(counts), waits, sessions=len(clients))

    def drain(self):
        n = self.args.sessions
        clients = self.connect(n + 1)
        holder = self.lock(clients[0])
        holder.acquire()
        granted = []
        failures = []

        def waiter(client):
            lock = self.lock(client)
            try:
                lock.acquire()
                granted.append(time.monotonic_ns())
                lock.release()
            except Exception as e:  # reported after the join
                failures.append(e)

        threads = [threading.Thread(target=waiter, args=(c,), daemon=True) for c in clients[1:]]
        for t in threads:
            t.start()
        until = time.monotonic() + 120
        while len(clients[0].get_children(self.args.path)) < n + 1:
            if time.monotonic() > until:
                raise RuntimeError("waiters did not queue within 120s")
            time.sleep(0.02)
        self.ready_and_wait()
        t0 = time.monotonic_ns()
        holder.release()
        for t in threads:
            t.join(300)
        if failures:
            raise failures[0]
        if len(granted) != n:
            raise RuntimeError("drain did not finish: %d of %d" % (len(granted), n))
        total = max(granted) - t0
        self.summary(n, [], handoffs=n, total_ns=total, per_handoff_ns=total // n)

    def run(self):
        try:
            {"bench-uncontended": self.uncontended, "bench-contended": self.contended,
             "bench-drain": self.drain}[self.args.mode]()
            while sys.stdin.readline():
                pass  # the runner closes stdin once it has read the server's counters
        finally:
            for c in self.clients:
                try:
                    c.stop()
                finally:
                    c.close()


def token(node):
    """The sequence suffix of a lock node name, or "-"."""
    if not node:
        return "-"
    name = node.rsplit("/", 1)[-1]
    m = re.search(r"(-?\d+)$", name)
    return m.group(1) if m else name


def percentile_us(sorted_ns, q):
    if not sorted_ns:
        return 0
    idx = min(len(sorted_ns) - 1, max(0, int(math.ceil(q * len(sorted_ns))) - 1))
    return sorted_ns[idx] // 1000


def parse_args(argv):
    # argparse takes a value beginning with "-" (such as "-lock-") for an option:
    # glue "--extra-lock-pattern VALUE" into "--extra-lock-pattern=VALUE" first.
    glued = []
    i = 0
    while i < len(argv):
        if argv[i] == "--extra-lock-pattern" and i + 1 < len(argv):
            glued.append("--extra-lock-pattern=" + argv[i + 1])
            i += 2
            continue
        glued.append(argv[i])
        i += 1
    argv = glued
    p = argparse.ArgumentParser(prog="kazoo_peer.py", description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=["mutex", "read", "write", "bench-uncontended", "bench-contended", "bench-drain"])
    p.add_argument("--servers", required=True, help="host:port[,host:port...]")
    p.add_argument("--path", required=True, help="the lock path")
    p.add_argument("--id", default="", help="participant id (default kazoo-<pid>)")
    p.add_argument("--duration", type=parse_duration, default=None,
                   help="run time, e.g. 4s or 500ms (default 4s; 60s cap for bench-uncontended)")
    p.add_argument("--count", type=int, default=1000, help="cycles for bench-uncontended")
    p.add_argument("--hold-ms", type=int, default=1, help="hold time per acquisition")
    p.add_argument("--hold-us", type=int, default=0,
                   help="bench-contended: time inside the critical section, in microseconds (default 0)")
    p.add_argument("--log", default="", help="shared log file (appended)")
    p.add_argument("--session-timeout-ms", type=int, default=10000)
    p.add_argument("--extra-lock-pattern", default="",
                   help='passed as extra_lock_patterns=[...] to kazoo Lock, e.g. "-lock-"')
    p.add_argument("--sync", default="", help="bench modes: READY / stdin handshake (see BenchPeer)")
    p.add_argument("--sessions", type=int, default=1, help="sessions for bench-contended and bench-drain")
    p.add_argument("--warmup", type=int, default=0, help="unmeasured cycles for bench-uncontended")
    args = p.parse_args(argv)
    if args.duration is None:
        args.duration = 60.0 if args.mode == "bench-uncontended" else 4.0
    return args


def start_watchdog(args, remaining):
    """Stop the process grace seconds after its duration; remaining() says
    how much of the duration is left."""
    # Long enough that only a stuck peer meets it: at load 28 a peer took more than the
    # 5 s this was before to finish its last cycle and close its client.
    grace = max(30.0, 2 * args.hold_ms / 1000.0 + args.session_timeout_ms / 2000.0)

    def watch():
        left = remaining() + grace
        while left > 0:
            time.sleep(left)  # the deadline moves once, when the client connects
            left = remaining() + grace
        sys.stderr.write("kazoo_peer: watchdog: %s still running %.1fs after its duration\n"
                         % (args.mode, grace))
        sys.stderr.flush()
        os._exit(EXIT_WATCHDOG)

    t = threading.Thread(target=watch, name="watchdog", daemon=True)
    t.start()


def main(argv):
    args = parse_args(argv)
    if args.mode == "bench-drain" or (args.mode.startswith("bench-") and args.sync):
        return bench_main(args)
    peer = Peer(args)
    start_watchdog(args, peer.remaining)
    try:
        peer.run()
    except Exception as e:  # report any failure as a non-zero exit with a message
        sys.stderr.write("kazoo_peer: error: %s %s: %r\n" % (args.mode, peer.ident, e))
        sys.stderr.flush()
        os._exit(EXIT_ERROR)
    sys.stdout.write(peer.summary() + "\n")
    sys.stdout.flush()
    return 0


def bench_main(args):
    def fire():
        sys.stderr.write("kazoo_peer: watchdog: %s still running after 10 minutes\n" % args.mode)
        sys.stderr.flush()
        os._exit(EXIT_WATCHDOG)

    t = threading.Timer(600, fire)
    t.daemon = True
    t.start()
    peer = BenchPeer(args)
    try:
        peer.run()
    except Exception as e:  # report any failure as a non-zero exit with a message
        sys.stderr.write("kazoo_peer: error: %s %s: %r\n" % (args.mode, peer.ident, e))
        sys.stderr.flush()
        os._exit(EXIT_ERROR)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
