package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zkrecipes/zkrecipes/integration/peers"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// CuratorCacheHeap is the JVM heap limit of the CuratorCache peer in the
// cache curve: room for a million cached nodes at Curator's ~270 bytes
// each, several times over.
const CuratorCacheHeap = "-Xmx4g"

// curatorCacheLine is the JSON line CuratorCacheBench prints.
type curatorCacheLine struct {
	Initialized    bool    `json:"initialized"`
	Nodes          int     `json:"nodes"`
	Expected       int     `json:"expected"`
	LoadMS         float64 `json:"load_ms"`
	HeapPerNode    float64 `json:"heap_b_per_node"`
	Exceptions     int     `json:"exceptions"`
	FirstException string  `json:"first_exception"`
	// ExceptionsFrom says what received the exceptions ("" for the
	// cache's exception handler).
	ExceptionsFrom string `json:"exceptions_from,omitempty"`
}

// CuratorCacheRun measures Apache Curator 5.4's CuratorCache of the tree
// at root, which holds nodes nodes, in a JVM of its own
// (peers/java/CuratorCacheBench.java, serial GC, CuratorCacheHeap):
// CacheRun's Nodes, Load (start until initialized) and HeapPerNode (the
// JVM's used heap after full GCs). A cache not initialized within limit,
// or initialized with other than nodes nodes, is an error saying how many
// nodes it cached and what its exception handler received; a JVM still
// running a minute after limit is killed by its pid.
func CuratorCacheRun(ctx context.Context, env Env, root string, nodes int, limit time.Duration) (CacheRun, error) {
	return runCuratorCachePeer(ctx, env, curatorPeer{"CuratorCache", "curator cache peer", "zkrecipes.peers.CuratorCacheBench"},
		nodes, limit, root, "0")
}

// curatorPeer is a JVM peer that loads a Curator cache and prints a
// curatorCacheLine: the recipe it measures, its name in errors, and its
// class.
type curatorPeer struct{ recipe, what, class string }

// runCuratorCachePeer runs p's class with the servers of env, args, nodes
// and limit (in whole seconds) as its arguments, in a JVM of its own
// (serial GC, CuratorCacheHeap), and returns what its last JSON line says
// (CuratorCacheRun tells the rest). The kernel kills the JVM should this
// process die first.
func runCuratorCachePeer(ctx context.Context, env Env, p curatorPeer, nodes int, limit time.Duration, args ...string) (CacheRun, error) {
	servers := strings.Join(env.ServerFor(0), ",")
	if err := peers.LoopbackOnly(servers); err != nil {
		return CacheRun{}, err
	}
	cp, err := peers.BuildJava(ctx)
	if err != nil {
		return CacheRun{}, err
	}
	limitS := max(int(limit/time.Second), 1)
	argv := append([]string{"-XX:+UseSerialGC", CuratorCacheHeap, "-cp", cp, p.class, servers}, args...)
	cmd := exec.Command("java", append(argv, strconv.Itoa(nodes), strconv.Itoa(limitS))...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return CacheRun{}, fmt.Errorf("bench: %s: %w", p.what, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	kill := time.NewTimer(time.Duration(limitS)*time.Second + time.Minute)
	defer kill.Stop()
	defer settleServer(ctx, env)
	var waitErr error
	select {
	case waitErr = <-done:
	case <-kill.C:
		_ = cmd.Process.Kill()
		<-done
		return CacheRun{}, fmt.Errorf("bench: %s still running %ds after its %ds limit: killed (pid %d); stderr: %s",
			p.what, 60, limitS, cmd.Process.Pid, tailOf(stderr.String(), 1000))
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		return CacheRun{}, ctx.Err()
	}
	line, err := lastJSONLine(stdout.String())
	if err != nil {
		return CacheRun{}, fmt.Errorf("bench: %s (%v): %w; stderr: %s", p.what, waitErr, err, tailOf(stderr.String(), 1000))
	}
	var l curatorCacheLine
	if err := json.Unmarshal([]byte(line), &l); err != nil {
		return CacheRun{}, fmt.Errorf("bench: %s: %q: %w", p.what, line, err)
	}
	if !l.Initialized || l.Nodes != nodes {
		return CacheRun{}, l.failure(p.recipe, nodes, limitS)
	}
	if waitErr != nil {
		return CacheRun{}, fmt.Errorf("bench: %s: %w; stderr: %s", p.what, waitErr, tailOf(stderr.String(), 1000))
	}
	return CacheRun{Nodes: l.Nodes, Load: time.Duration(l.LoadMS * float64(time.Millisecond)), HeapPerNode: l.HeapPerNode}, nil
}

// settleServer waits, 30 s at most, until no server of env has requests
// outstanding (mntr's zk_outstanding_requests): a peer stopped in its
// load may leave thousands queued, which would slow what is measured
// next.
func settleServer(ctx context.Context, env Env) {
	_ = poll(ctx, 30*time.Second, 100*time.Millisecond, func() (bool, error) {
		for _, s := range env.Servers {
			m, err := zktest.Mntr(ctx, s)
			if err != nil || m["zk_outstanding_requests"] != "0" {
				return false, nil
			}
		}
		return true, nil
	})
}

// failure says how a Curator cache (recipe: "CuratorCache",
// "ServiceCache") that did not load the whole tree failed.
func (l curatorCacheLine) failure(recipe string, nodes, limitS int) error {
	what := fmt.Sprintf("initialized after %.0f ms with %d of %d nodes", l.LoadMS, l.Nodes, nodes)
	if !l.Initialized {
		what = fmt.Sprintf("not initialized within %d s: cached %d of %d nodes", limitS, l.Nodes, nodes)
	}
	if l.Exceptions > 0 {
		from := l.ExceptionsFrom
		if from == "" {
			from = "its exception handler"
		}
		what += fmt.Sprintf("; %s received %d exceptions, the first %s", from, l.Exceptions, l.FirstException)
	}
	return errors.New(recipe + " " + what)
}

// lastJSONLine returns the last line of out that starts with "{".
func lastJSONLine(out string) (string, error) {
	var line string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "{") {
			line = l
		}
	}
	if line == "" {
		return "", fmt.Errorf("no JSON line in %q", tailOf(out, 500))
	}
	return line, nil
}

// tailOf returns the last n bytes of s.
func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
