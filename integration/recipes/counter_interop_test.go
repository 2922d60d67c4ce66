package recipes_test

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/peers"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// counterPeer is one run of the Curator counter peer
// (peers/java/CuratorCounterPeer.java).
type counterPeer struct {
	cmd  *exec.Cmd
	out  zktest.LogBuffer
	errb zktest.LogBuffer
	done chan struct{}
	err  error
}

// startCounterPeer starts the Curator counter peer with command cmd on
// path, killed with the test.
func startCounterPeer(t *testing.T, c *zktest.Cluster, cmd, path string, args ...string) *counterPeer {
	t.Helper()
	peers.Require(t, peers.Curator)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cp, err := peers.BuildJava(ctx)
	require.NoError(t, err)
	argv := append([]string{"-XX:+UseSerialGC", "-Xmx256m", "-cp", cp, "zkrecipes.peers.CuratorCounterPeer",
		cmd, strings.Join(c.Servers(), ","), path}, args...)
	p := &counterPeer{cmd: exec.Command("java", argv...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.errb
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		if t.Failed() {
			t.Logf("curator %s %s: stdout %q stderr:\n%s", cmd, path, p.out.String(), p.errb.String())
		}
	})
	return p
}

// line waits for the peer's first output line starting with prefix.
func (p *counterPeer) line(t *testing.T, prefix string) string {
	t.Helper()
	var got string
	require.Eventually(t, func() bool {
		for _, l := range strings.Split(p.out.String(), "\n") {
			if strings.HasPrefix(l, prefix) {
				got = l
				return true
			}
		}
		return false
	}, 90*time.Second, 10*time.Millisecond, "curator peer: no %q line", prefix)
	return got
}

// wait waits for the peer to exit and requires success.
func (p *counterPeer) wait(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(2 * time.Minute):
		t.Fatal("curator peer did not exit")
	}
	require.NoError(t, p.err, "curator peer: %s", p.errb.String())
}

func TestInterop_CuratorSetCountIsSeenByGoWatch(t *testing.T) {
	c := server(t)
	s := connect(t, c, nil)
	path := testPath(t) + "/count"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	got := make(chan zr.VersionedCount, 100)
	done := make(chan error, 1)
	go func() {
		done <- zr.NewSharedCount(s.Session, path, 5).Watch(ctx, func(v zr.VersionedCount) { got <- v })
	}()
	first := <-got
	require.Equal(t, int32(5), first.Count, "the Go side created the count with its seed")

	startCounterPeer(t, c, "count-set", path, "42").wait(t)
	var last zr.VersionedCount
	require.Eventually(t, func() bool {
		for {
			select {
			case last = <-got:
			default:
				return last.Count == 42
			}
		}
	}, 30*time.Second, 5*time.Millisecond, "the Go watch sees Curator's setCount")
	assert.Greater(t, last.Version, first.Version)

	// And Curator reads back what it wrote, with the same version.
	out := startCounterPeer(t, c, "count-get", path).line(t, "count ")
	assert.Equal(t, fmt.Sprintf("count 42 %d", last.Version), out)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}

func TestInterop_GoSetCountIsSeenByCuratorListener(t *testing.T) {
	c := server(t)
	s := connect(t, c, nil)
	path := testPath(t) + "/count"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	count := zr.NewSharedCount(s.Session, path, 3)
	_, err := count.Get(ctx)
	require.NoError(t, err)

	w := startCounterPeer(t, c, "count-watch", path, "-77")
	require.Equal(t, "ready 3", w.line(t, "ready"), "Curator reads the Go seed")
	set, err := count.Set(ctx, -77)
	require.NoError(t, err)
	w.line(t, "saw -77")
	w.wait(t)

	out := startCounterPeer(t, c, "count-get", path).line(t, "count ")
	assert.Equal(t, fmt.Sprintf("count -77 %d", set.Version), out, "Curator's getCount and version match Go's Set")
}

// Curator's DistributedAtomicLong and zkrecipes' AtomicCounter increment
// one counter at once: the final value is the exact total of both sides'
// successful increments, with the optimistic tries alone and with the
// promoted lock on both sides.
func TestInterop_AtomicCounterWithCuratorGivesTheExactTotal(t *testing.T) {
	for _, promoted := range []bool{false, true} {
		t.Run(fmt.Sprintf("promoted=%v", promoted), func(t *testing.T) {
			c := server(t)
			path := testPath(t) + "/n"
			lock := testPath(t) + "/lock"
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			var extra []string
			opts := []zr.CounterOption{zr.WithOptimisticRetry(zr.RetryNTimes(1000, time.Millisecond))}
			if promoted {
				extra = []string{lock}
				opts = []zr.CounterOption{zr.WithOptimisticRetry(zr.RetryNTimes(2, time.Millisecond)), zr.WithPromotedLock(lock)}
			}
			const curatorTimes = 300
			java := []*counterPeer{
				startCounterPeer(t, c, "long-add", path, append([]string{strconv.Itoa(curatorTimes)}, extra...)...),
				startCounterPeer(t, c, "long-add", path, append([]string{strconv.Itoa(curatorTimes)}, extra...)...),
			}
			var mu sync.Mutex
			goOK := 0
			var wg sync.WaitGroup
			for i := 0; i < 4; i++ {
				ctr := zr.NewAtomicCounter(connect(t, c, nil).Session, path, opts...)
				wg.Add(1)
				go func() {
					defer wg.Done()
					// Increment while the Curator peers run.
					for j := 0; j < 2000; j++ {
						select {
						case <-java[0].done:
							return
						default:
						}
						r, err := ctr.Increment(ctx)
						if err == nil && r.Succeeded {
							mu.Lock()
							goOK++
							mu.Unlock()
						}
					}
				}()
			}
			wg.Wait()
			total := goOK
			for _, p := range java {
				p.wait(t)
				n, err := strconv.Atoi(strings.TrimPrefix(p.line(t, "ok "), "ok "))
				require.NoError(t, err)
				total += n
			}
			v, err := zr.NewAtomicCounter(connect(t, c, nil).Session, path).Get(ctx)
			require.NoError(t, err)
			assert.Equal(t, int64(total), v, "Go's Get is the exact total")
			out := startCounterPeer(t, c, "long-get", path).line(t, "long ")
			assert.Equal(t, fmt.Sprintf("long %d", total), out, "Curator's get is the exact total")
			t.Logf("total %d (%d from Go)", total, goOK)
			require.Greater(t, goOK, 0)
		})
	}
}

// A change made while the watching session was expired is delivered once
// the Session is back on a new session.
func TestSharedCountWatchSeesAChangeMadeWhileItsSessionExpired(t *testing.T) {
	c := server(t)
	s := connect(t, c, nil)
	path := testPath(t) + "/count"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got := make(chan zr.VersionedCount, 100)
	done := make(chan error, 1)
	go func() {
		done <- zr.NewSharedCount(s.Session, path, 1).Watch(ctx, func(v zr.VersionedCount) { got <- v })
	}()
	require.Equal(t, int32(1), (<-got).Count)

	st := watchStates(t, s.Session)
	s.expire(t)
	st.next(t, 20*time.Second, zr.StateLost)
	other := zr.NewSharedCount(connect(t, c, nil).Session, path, 1)
	_, err := other.Set(ctx, 42)
	require.NoError(t, err)
	st.next(t, 20*time.Second, zr.StateReconnected)
	var last zr.VersionedCount
	require.Eventually(t, func() bool {
		for {
			select {
			case last = <-got:
			default:
				return last.Count == 42
			}
		}
	}, 20*time.Second, 5*time.Millisecond, "the watch sees the change made while its session was gone")
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}

// Changes made while the watching client was cut off (same session) are
// delivered once it is back: the last of them, at least.
func TestSharedCountWatchSeesTheLastChangeMadeWhileTheConnectionWasDown(t *testing.T) {
	c := server(t)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	s := connect(t, c, []string{proxy.Addr()}, zr.WithSessionTimeout(6*time.Second))
	path := testPath(t) + "/count"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got := make(chan zr.VersionedCount, 100)
	done := make(chan error, 1)
	go func() {
		done <- zr.NewSharedCount(s.Session, path, 1).Watch(ctx, func(v zr.VersionedCount) { got <- v })
	}()
	require.Equal(t, int32(1), (<-got).Count)
	id := s.SessionID()

	st := watchStates(t, s.Session)
	proxy.Blackhole()
	st.next(t, 10*time.Second, zr.StateSuspended)
	other := zr.NewSharedCount(connect(t, c, nil).Session, path, 1)
	for n := int32(2); n <= 5; n++ {
		_, err := other.Set(ctx, n)
		require.NoError(t, err)
	}
	proxy.Heal()
	require.Equal(t, id, st.next(t, 10*time.Second, zr.StateReconnected).SessionID, "the same session")
	var last zr.VersionedCount
	require.Eventually(t, func() bool {
		for {
			select {
			case last = <-got:
			default:
				return last.Count == 5
			}
		}
	}, 20*time.Second, 5*time.Millisecond, "the watch sees the last change made while it was cut off")
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}
