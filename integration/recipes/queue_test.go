package recipes_test

//lint:file-ignore SA1019 WithTracer is deprecated (an adapter on the Observer); it still sees every request with its absolute path, which this file uses.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
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

// queuePeer is a Curator SimpleDistributedQueue process
// (peers/java/CuratorQueuePeer.java).
type queuePeer struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	mu    sync.Mutex
	out   bytes.Buffer
	done  chan struct{}
	err   error
}

func (p *queuePeer) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *queuePeer) stdout() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// startQueuePeer runs CuratorQueuePeer with args (mode, servers, path,
// ...), skipping the test when Curator is not installed (failing it under
// CI). The process is killed when the test ends.
func startQueuePeer(t *testing.T, args ...string) *queuePeer {
	t.Helper()
	return startCuratorQueuePeer(t, "CuratorQueuePeer", args...)
}

// startCuratorQueuePeer runs the Java peer class (peers/java/CLASS.java)
// with args, its standard input and output piped to the queuePeer. It
// skips the test when Curator is not installed (fails it under CI); the
// process is killed when the test ends, and its output logged if the test
// failed.
func startCuratorQueuePeer(t *testing.T, class string, args ...string) *queuePeer {
	t.Helper()
	peers.Require(t, peers.Curator)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cp, err := peers.BuildJava(ctx)
	require.NoError(t, err)
	p := &queuePeer{done: make(chan struct{})}
	p.cmd = exec.Command("java", append([]string{"-XX:+UseSerialGC", "-Xmx256m", "-cp", cp, "zkrecipes.peers." + class}, args...)...)
	p.cmd.Stdout = p
	var stderr bytes.Buffer
	p.cmd.Stderr = &stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	in, err := p.cmd.StdinPipe()
	require.NoError(t, err)
	p.stdin = in
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		if t.Failed() {
			t.Logf("%s %v: stdout:\n%s\nstderr:\n%s", class, args, p.stdout(), stderr.String())
		}
	})
	return p
}

// wait waits for the peer to exit successfully and returns the items it
// printed.
func (p *queuePeer) wait(t *testing.T, d time.Duration) []string {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("curator queue peer still running after %v", d)
	}
	require.NoError(t, p.err)
	var items []string
	for _, l := range strings.Split(p.stdout(), "\n") {
		if item, ok := strings.CutPrefix(l, "ITEM "); ok {
			items = append(items, item)
		}
	}
	return items
}

func queueItems(prefix string, n int) []string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return items
}

func TestQueue_CuratorTakesGoOffersInOrder(t *testing.T) {
	c := server(t)
	path := testPath(t)
	s := connect(t, c, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	q := zr.NewQueue(s.Session, path)
	want := queueItems("go", 50)
	for _, item := range want {
		require.NoError(t, q.Offer(ctx, []byte(item)))
	}
	got := startQueuePeer(t, "take", c.Servers()[0], path, "50").wait(t, 60*time.Second)
	assert.Equal(t, want, got)
	assert.Empty(t, children(t, raw(t, c), path))
}

func TestQueue_GoTakesCuratorOffersInOrder(t *testing.T) {
	c := server(t)
	path := testPath(t)
	startQueuePeer(t, "offer", c.Servers()[0], path, "50", "curator").wait(t, 60*time.Second)
	s := connect(t, c, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	q := zr.NewQueue(s.Session, path)
	var got []string
	for range 50 {
		item, err := q.Take(ctx)
		require.NoError(t, err)
		got = append(got, string(item))
	}
	assert.Equal(t, queueItems("curator", 50), got)
	_, err := q.Poll(ctx)
	assert.ErrorIs(t, err, zr.ErrQueueEmpty)
}

// Two Curator consumers and two zkrecipes consumers take from one queue
// while Curator and zkrecipes producers offer: every item is taken exactly
// once.
func TestQueue_MixedGoAndCuratorConsumersTakeEachItemOnce(t *testing.T) {
	c := server(t)
	path := testPath(t)
	srv := c.Servers()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	consumers := []*queuePeer{startQueuePeer(t, "consume", srv, path), startQueuePeer(t, "consume", srv, path)}
	// Items offered before a JVM has connected would all go to the Go
	// consumers: start offering once both Curator consumers poll.
	for _, p := range consumers {
		require.Eventually(t, func() bool { return strings.Contains(p.stdout(), "READY\n") }, 60*time.Second, 10*time.Millisecond,
			"a Curator consumer did not start")
	}
	producer := startQueuePeer(t, "offer", srv, path, "200", "curator")

	var mu sync.Mutex
	var goTaken []string
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	errc := make(chan error, 3)
	for range 2 {
		q := zr.NewQueue(connect(t, c, nil).Session, path)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				item, err := q.Take(cctx)
				if err != nil {
					if cctx.Err() == nil {
						errc <- err
					}
					return
				}
				mu.Lock()
				goTaken = append(goTaken, string(item))
				mu.Unlock()
			}
		}()
	}
	gq := zr.NewQueue(connect(t, c, nil).Session, path)
	for _, item := range queueItems("go", 200) {
		require.NoError(t, gq.Offer(ctx, []byte(item)))
	}
	producer.wait(t, 60*time.Second)

	// Wait until the queue is empty, then stop every consumer.
	observer := raw(t, c)
	require.Eventually(t, func() bool { return len(children(t, observer, path)) == 0 }, 60*time.Second, 20*time.Millisecond)
	stop()
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	seen := map[string]int{}
	for _, item := range goTaken {
		seen[item]++
	}
	fromCurator := 0
	for _, p := range consumers {
		require.NoError(t, p.stdin.Close())
		items := p.wait(t, 30*time.Second)
		fromCurator += len(items)
		for _, item := range items {
			seen[item]++
		}
	}
	t.Logf("zkrecipes consumers took %d items, Curator consumers %d", len(goTaken), fromCurator)
	assert.Len(t, seen, 400)
	for item, n := range seen {
		assert.Equal(t, 1, n, "item %s taken %d times", item, n)
	}
	assert.NotZero(t, fromCurator, "no Curator consumer took anything")
	assert.NotZero(t, len(goTaken), "no zkrecipes consumer took anything")
}

// A consumer whose session expires after it read the head item and before
// its delete has taken nothing: on its new session it takes the item, or,
// when another consumer took the item meanwhile, the next one. No item is
// lost or taken twice.
func TestQueue_ConsumerWhoseSessionExpiresMidTakeLosesNothing(t *testing.T) {
	for _, other := range []bool{false, true} {
		t.Run(fmt.Sprintf("OtherConsumer=%v", other), func(t *testing.T) {
			c := server(t)
			path := testPath(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			producer := zr.NewQueue(connect(t, c, nil).Session, path)
			require.NoError(t, producer.Offer(ctx, []byte("one")))

			// The moment the consumer has read the item, before it sends
			// the delete: expire its session (another consumer takes the
			// item and one more is offered), and let it go on once it is
			// connected under a new session.
			var consumer *client
			var changes <-chan zr.StateChange
			var once sync.Once
			hookErr := make(chan error, 1)
			var otherItem []byte
			hook := zr.TracerFunc(func(ev zr.TraceEvent) {
				if ev.Op != "getData" || !strings.HasPrefix(ev.Path, path+"/qn-") || ev.Err != nil {
					return
				}
				once.Do(func() { hookErr <- expireMidTake(ctx, consumer, changes, other, producer, &otherItem) })
			})
			consumer = connect(t, c, nil, zr.WithTracer(hook))
			subCtx, unsubscribe := context.WithCancel(context.Background())
			defer unsubscribe()
			changes, _ = consumer.Subscribe(subCtx)

			item, err := zr.NewQueue(consumer.Session, path).Take(ctx)
			require.NoError(t, <-hookErr)
			require.NoError(t, err)
			if other {
				assert.Equal(t, "one", string(otherItem))
				assert.Equal(t, "two", string(item))
			} else {
				assert.Equal(t, "one", string(item))
			}
			assert.Empty(t, children(t, raw(t, c), path))
		})
	}
}

// expireMidTake expires consumer's session; when other is set, takes the
// head item through q into *otherItem and offers "two"; then waits for
// consumer to be connected under a new session.
func expireMidTake(ctx context.Context, consumer *client, changes <-chan zr.StateChange, other bool, q *zr.Queue, otherItem *[]byte) error {
	old := consumer.SessionID()
	if err := consumer.cluster.ExpireSession(ctx, consumer.capture); err != nil {
		return err
	}
	if other {
		var err error
		if *otherItem, err = q.Poll(ctx); err != nil {
			return err
		}
		if err := q.Offer(ctx, []byte("two")); err != nil {
			return err
		}
	}
	for {
		select {
		case ch := <-changes:
			if (ch.State == zr.StateConnected || ch.State == zr.StateReconnected) && ch.SessionID != old {
				return nil
			}
		case <-ctx.Done():
			return fmt.Errorf("consumer not reconnected under a new session: %w", ctx.Err())
		}
	}
}

// TestQueue_BesideCurator measures a zkrecipes Queue and a Curator
// SimpleDistributedQueue on the same server, one after the other, three
// rounds: N offers then N takes (a backlog), then N times one offer and its
// take (a queue of one). Set ZKRECIPES_QUEUE_BENCH=N to run it with
// N items.
func TestQueue_BesideCurator(t *testing.T) {
	n := 0
	if _, err := fmt.Sscan(os.Getenv("ZKRECIPES_QUEUE_BENCH"), &n); err != nil || n <= 0 {
		t.Skip("set ZKRECIPES_QUEUE_BENCH=<items> to run the queue benchmark")
	}
	c := server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for round := range 3 {
		q := zr.NewQueue(connect(t, c, nil).Session, fmt.Sprintf("%s/go-%d", testPath(t), round))
		item := []byte("0123456789abcdef")
		for range min(n, 200) { // warm-up, as the Curator side does
			require.NoError(t, q.Offer(ctx, item))
			_, err := q.Take(ctx)
			require.NoError(t, err)
		}
		start := time.Now()
		for range n {
			require.NoError(t, q.Offer(ctx, item))
		}
		offer := time.Since(start)
		lat := make([]time.Duration, n)
		start = time.Now()
		for i := range n {
			t0 := time.Now()
			_, err := q.Take(ctx)
			require.NoError(t, err)
			lat[i] = time.Since(t0)
		}
		take := time.Since(start)
		slices.Sort(lat)
		one := make([]time.Duration, n) // one item at a time: offer, then take it
		start = time.Now()
		for i := range n {
			require.NoError(t, q.Offer(ctx, item))
			t0 := time.Now()
			_, err := q.Take(ctx)
			require.NoError(t, err)
			one[i] = time.Since(t0)
		}
		pairs := time.Since(start)
		slices.Sort(one)
		t.Logf("zkrecipes: offer %.0f/s take %.0f/s take p50 %dus p99 %dus; one at a time: %.0f pairs/s take p50 %dus p99 %dus",
			float64(n)/offer.Seconds(), float64(n)/take.Seconds(), lat[n/2].Microseconds(), lat[n*99/100].Microseconds(),
			float64(n)/pairs.Seconds(), one[n/2].Microseconds(), one[n*99/100].Microseconds())

		p := startQueuePeer(t, "bench", c.Servers()[0], fmt.Sprintf("%s/curator-%d", testPath(t), round), fmt.Sprint(n))
		p.wait(t, 5*time.Minute)
		line := strings.TrimSpace(p.stdout())
		require.True(t, strings.HasPrefix(line, "{"), "bench output %q", line)
		t.Logf("curator:   %s", line)
	}
}

// A consumer whose delete reaches the server while the reply is lost
// (ZOOKEEPER-1262, through zktest's proxy) cannot tell its delete from
// another consumer's: it returns the item with ErrTakeUncertain. When
// another consumer did take the item, both have it, and only that one
// without an error: the at-least-once case, flagged.
func TestQueue_LostDeleteReplyReturnsTheItemFlaggedUncertain(t *testing.T) {
	for _, other := range []bool{false, true} {
		t.Run(fmt.Sprintf("OtherConsumer=%v", other), func(t *testing.T) {
			c := server(t)
			path := testPath(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			producer := zr.NewQueue(connect(t, c, nil).Session, path)
			require.NoError(t, producer.Offer(ctx, []byte("one")))

			proxy := zktest.NewProxy(t, c.Servers()[0])
			var once sync.Once
			hookErr := make(chan error, 1)
			var otherItem []byte
			hook := zr.TracerFunc(func(ev zr.TraceEvent) {
				if ev.Op != "getData" || !strings.HasPrefix(ev.Path, path+"/qn-") || ev.Err != nil {
					return
				}
				once.Do(func() {
					// The read's reply is in: lose every later one, the
					// delete's included, until the proxy resets.
					proxy.LoseReplies(time.Second)
					var err error
					if other {
						otherItem, err = producer.Poll(ctx)
					}
					hookErr <- err
				})
			})
			consumer := connect(t, c, []string{proxy.Addr()}, zr.WithTracer(hook))
			item, err := zr.NewQueue(consumer.Session, path).Take(ctx)
			require.NoError(t, <-hookErr)
			assert.Equal(t, "one", string(item))
			assert.ErrorIs(t, err, zr.ErrTakeUncertain)
			if other {
				assert.Equal(t, "one", string(otherItem))
			}
			assert.Empty(t, children(t, raw(t, c), path))
		})
	}
}

// A consumer that took from the middle of a listing keeps the rest of it
// for its next takes. Once another consumer has drained the queue, the
// server deletes the empty container, and new offers make it again with a
// sequence that starts over at 0: the names the first consumer kept now
// name newer items. Its next takes still come in the order the items were
// offered. Before, it took qn-0000000001 before qn-0000000000.
//
// The server checks its containers every 100 ms (60 s by default), so
// that each round sees the parent deleted and made again.
func TestQueue_ConsumerKeepsFIFOAfterTheContainerIsDeletedAndMadeAgain(t *testing.T) {
	c := zktest.Start(t, zktest.WithJVMFlags("-Xmx256m", "-XX:+UseSerialGC", "-Xshare:auto", "-XX:TieredStopAtLevel=1",
		"-Dznode.container.checkIntervalMs=100"))
	if c.Backend() == zktest.BackendServers {
		msg := "starts a server with -Dznode.container.checkIntervalMs, which ZK_SERVERS cannot; the java and docker backends run it"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	obs := raw(t, c)
	path := testPath(t) + "/q"
	mkdirs(t, obs, testPath(t)) // persistent: only the queue's own node is a container
	ctx := ctxT(t, time.Minute)
	cached := zr.NewQueue(connect(t, c, nil).Session, path)
	other := zr.NewQueue(connect(t, c, nil).Session, path)

	const rounds = 20
	for round := range rounds {
		name := fmt.Sprintf("round %d", round)
		before := queueItems(fmt.Sprintf("r%d-a", round), 3+round%3)
		for _, it := range before {
			require.NoError(t, other.Offer(ctx, []byte(it)), name)
		}
		// The first take lists the queue and keeps the rest of the listing.
		item, err := cached.Take(ctx)
		require.NoError(t, err, name)
		require.Equal(t, before[0], string(item), name)
		// Another consumer drains the queue; the server deletes its empty
		// container.
		for _, want := range before[1:] {
			item, err := other.Take(ctx)
			require.NoError(t, err, name)
			require.Equal(t, want, string(item), name)
		}
		require.Eventually(t, func() bool {
			ok, _, err := obs.Exists(path)
			return err == nil && !ok
		}, 10*time.Second, 10*time.Millisecond, "%s: the empty container is deleted", name)

		after := queueItems(fmt.Sprintf("r%d-b", round), 2+round%4)
		for _, it := range after {
			require.NoError(t, other.Offer(ctx, []byte(it)), name)
		}
		var got []string
		for range after {
			item, err := cached.Take(ctx)
			require.NoError(t, err, name)
			got = append(got, string(item))
		}
		require.Equal(t, after, got, "%s: the consumer takes the items in the order they were offered", name)
	}
}
