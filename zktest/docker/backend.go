// Package docker is the Docker backend of package zktest, in a module of its own so that a
// test that wants no Docker never downloads testcontainers. Importing it, for its side
// effect, registers the backend [zktest.BackendDocker]:
//
//	import _ "github.com/zkrecipes/zkrecipes/zktest/docker"
//
// Then ZK_TEST_BACKEND=docker, or zktest.WithBackend(zktest.BackendDocker), runs each
// server in a container on the host network through testcontainers-go (image from
// ZK_TEST_IMAGE, default [zktest.DefaultImage]); with no backend named, zktest tries it after
// the "servers" and "java" backends. Containers bind 127.0.0.1 of the host and no bridge
// network is ever created. Kill, Restart, Stop and Cont are docker kill, start, pause and
// unpause. Each container carries its test process's host, pid and process start time,
// and the first backend a process opens removes the containers of test processes on
// this host that are gone (killed before their cleanup ran), since the Ryuk reaper of
// testcontainers is off (its image would need a registry).
package docker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/zkrecipes/zkrecipes/zktest"
)

func init() {
	if err := zktest.RegisterBackend(zktest.BackendDocker, open); err != nil {
		// Another package took the name: the harness's own error says it on use.
		fmt.Fprintf(os.Stderr, "zktest/docker: %v\n", err)
	}
}

func open(ctx context.Context) (zktest.Backend, error) { return newDockerBackend(ctx) }

// Container paths shared by the official image and ours: the entrypoint reads
// /conf/zoo.cfg and keeps its data (and myid) in /data.
const (
	containerConf = "/conf/zoo.cfg"
	containerData = "/data"
)

// dockerBackend runs each server in a container on the host network, so that
// ZooKeeper binds 127.0.0.1 of the host directly and no bridge or NAT is involved.
type dockerBackend struct {
	image string
	cli   *testcontainers.DockerClient
}

var dockerEnvOnce sync.Once

// dockerEnv configures testcontainers before its first use: no Ryuk reaper container
// (its image would need a registry; Close and tb.Cleanup remove our containers), and
// 127.0.0.1 as the daemon host, since otherwise testcontainers may dial a gateway
// address.
func dockerEnv() {
	dockerEnvOnce.Do(func() {
		_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
		_ = os.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")
	})
}

func newDockerBackend(ctx context.Context) (*dockerBackend, error) {
	dockerEnv()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, unavailable("no Docker engine: %v", err)
	}
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		return nil, unavailable("Docker engine does not answer: %v", err)
	}
	nets, err := cli.NetworkList(ctx, client.NetworkListOptions{})
	if err != nil {
		return nil, unavailable("listing networks: %v", err)
	}
	if !slices.ContainsFunc(nets.Items, func(n network.Summary) bool { return n.Name == "host" }) {
		return nil, unavailable("the engine has no host network")
	}
	image := os.Getenv("ZK_TEST_IMAGE")
	if image == "" {
		image = zktest.DefaultImage
	}
	b := &dockerBackend{image: image, cli: cli}
	reapOnce.Do(func() {
		if n, err := b.reapOrphans(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "zktest/docker: %v\n", err)
		} else if n > 0 {
			fmt.Fprintf(os.Stderr, "zktest/docker: removed %d container(s) of test processes that are gone\n", n)
		}
	})
	return b, nil
}

// reapOnce: one process removes the orphans once, at its first docker backend.
var reapOnce sync.Once

// unavailable wraps zktest.ErrNoBackend with the reason the backend cannot run.
func unavailable(format string, args ...any) error {
	return fmt.Errorf("%w: docker backend: %s", zktest.ErrNoBackend, fmt.Sprintf(format, args...))
}

// Launch starts one container per server of p, in parallel.
func (b *dockerBackend) Launch(ctx context.Context, p zktest.LaunchPlan) ([]zktest.BackendServer, error) {
	ms := make([]*dockerServer, len(p.Servers))
	errs := make([]error, len(p.Servers))
	var wg sync.WaitGroup
	for i, s := range p.Servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ms[i], errs[i] = b.run(ctx, s, p)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			for _, m := range ms {
				if m != nil {
					_ = m.Close(context.WithoutCancel(ctx))
				}
			}
			return nil, err
		}
	}
	out := make([]zktest.BackendServer, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out, nil
}

func (b *dockerBackend) run(ctx context.Context, s zktest.ServerPlan, p zktest.LaunchPlan) (*dockerServer, error) {
	conf := s.ZooCfg(containerData)
	entrypoint, jvmflags, err := b.dockerJVM(ctx, p.JVMFlags)
	if err != nil {
		return nil, err
	}
	opts := []testcontainers.ContainerCustomizer{
		testcontainers.WithLogger(tclog.NewNoopLogger()),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.NetworkMode = "host"
		}),
		testcontainers.WithFiles(
			testcontainers.ContainerFile{Reader: strings.NewReader(conf), ContainerFilePath: containerConf, FileMode: 0o644},
			testcontainers.ContainerFile{Reader: strings.NewReader(strconv.Itoa(s.ID) + "\n"), ContainerFilePath: containerData + "/myid", FileMode: 0o644},
		),
		testcontainers.WithEnv(map[string]string{
			// Read by the official image's scripts; ours has its flags built in.
			"JVMFLAGS":         jvmflags,
			"ZOO_CLIENT_PORT":  strconv.Itoa(s.ClientPort),
			"ZOO_MY_ID":        strconv.Itoa(s.ID),
			"ZOO_4LW_COMMANDS": "*",
		}),
		testcontainers.WithLabels(ownerLabels()),
	}
	if p.LogWriter != nil {
		opts = append(opts, testcontainers.WithLogConsumers(logConsumer{p.LogWriter}))
	}
	req := testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{Image: b.image, Entrypoint: entrypoint},
		Started:          true,
	}
	for _, o := range opts {
		if err := o.Customize(&req); err != nil {
			return nil, fmt.Errorf("zktest/docker: docker request: %w", err)
		}
	}
	// Not testcontainers.Run: its provider would create a "reaper_default" bridge
	// network when the engine has no "bridge" (dockerd --bridge=none). Naming "host"
	// the default network keeps every container on the host network only.
	prov, err := testcontainers.NewDockerProvider(
		testcontainers.WithDefaultBridgeNetwork("host"),
		testcontainers.WithLogger(tclog.NewNoopLogger()),
	)
	if err != nil {
		return nil, fmt.Errorf("zktest/docker: docker provider: %w", err)
	}
	defer prov.Close()
	c, err := prov.CreateContainer(ctx, req.ContainerRequest)
	ctr, _ := c.(*testcontainers.DockerContainer)
	if err == nil && ctr == nil {
		err = fmt.Errorf("unexpected container type %T", c)
	}
	if err == nil {
		err = ctr.Start(ctx)
	}
	if err != nil {
		if ctr != nil {
			_ = ctr.Terminate(context.Background())
		}
		return nil, fmt.Errorf("zktest/docker: docker run %s: %w", b.image, err)
	}
	return &dockerServer{address: s.Addr(), ctr: ctr, cli: b.cli}, nil
}

type logConsumer struct{ w io.Writer }

func (l logConsumer) Accept(g testcontainers.Log) { _, _ = l.w.Write(g.Content) }

// dockerServer is one container.
type dockerServer struct {
	address string
	ctr     *testcontainers.DockerContainer
	cli     *testcontainers.DockerClient
	mu      sync.Mutex
	closed  bool
}

func (s *dockerServer) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("zktest/docker: server %s closed", s.address)
	}
	return s.ctr.Start(ctx)
}

func (s *dockerServer) Kill(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := s.cli.ContainerKill(ctx, s.ctr.GetContainerID(), client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		return fmt.Errorf("zktest/docker: docker kill %s: %w", s.address, err)
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := s.ctr.State(ctx)
		if err == nil && !st.Running {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("zktest/docker: docker kill %s: container still running: %w", s.address, ctx.Err())
		case <-tick.C:
		}
	}
}

func (s *dockerServer) Stop(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := s.cli.ContainerPause(ctx, s.ctr.GetContainerID(), client.ContainerPauseOptions{})
	return err
}

func (s *dockerServer) Cont(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := s.cli.ContainerUnpause(ctx, s.ctr.GetContainerID(), client.ContainerUnpauseOptions{})
	return err
}

func (s *dockerServer) Exited() <-chan struct{} { return nil }

func (s *dockerServer) LogTail(ctx context.Context, n int) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rc, err := s.ctr.Logs(ctx)
	if err != nil {
		return ""
	}
	defer rc.Close()
	var b bytes.Buffer
	_, _ = io.Copy(&b, rc)
	return tailLines(b.String(), n)
}

// tailLines returns the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (s *dockerServer) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	// A paused container cannot be killed until it is resumed.
	_, _ = s.cli.ContainerUnpause(ctx, s.ctr.GetContainerID(), client.ContainerUnpauseOptions{})
	return s.ctr.Terminate(ctx)
}
