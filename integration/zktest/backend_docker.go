package zktest

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
)

// DefaultImage is the image the docker backend runs unless ZK_TEST_IMAGE names
// another: the official Docker Hub ZooKeeper image. CI builds and uses
// zkrecipes/zookeeper:3.8-debian offline (integration/docker/build-image.sh).
const DefaultImage = "zookeeper"

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

func (b *dockerBackend) name() string { return BackendDocker }

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
		return nil, unavailable("docker backend: no Docker engine: %v", err)
	}
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		return nil, unavailable("docker backend: Docker engine does not answer: %v", err)
	}
	nets, err := cli.NetworkList(ctx, client.NetworkListOptions{})
	if err != nil {
		return nil, unavailable("docker backend: listing networks: %v", err)
	}
	if !slices.ContainsFunc(nets.Items, func(n network.Summary) bool { return n.Name == "host" }) {
		return nil, unavailable("docker backend: the engine has no host network")
	}
	image := os.Getenv("ZK_TEST_IMAGE")
	if image == "" {
		image = DefaultImage
	}
	b := &dockerBackend{image: image, cli: cli}
	reapOnce.Do(func() {
		if n, err := b.reapOrphans(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "zktest: docker backend: %v\n", err)
		} else if n > 0 {
			fmt.Fprintf(os.Stderr, "zktest: docker backend: removed %d container(s) of test processes that are gone\n", n)
		}
	})
	return b, nil
}

// reapOnce: one process removes the orphans once, at its first docker backend.
var reapOnce sync.Once

func (b *dockerBackend) launch(ctx context.Context, _ string, specs []serverSpec, cfg config) ([]member, error) {
	ms := make([]member, len(specs))
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	for i, s := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ms[i], errs[i] = b.run(ctx, specs, i, s, cfg)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			for _, m := range ms {
				if m != nil {
					_ = m.close()
				}
			}
			return nil, err
		}
	}
	return ms, nil
}

func (b *dockerBackend) run(ctx context.Context, specs []serverSpec, i int, s serverSpec, cfg config) (member, error) {
	conf := zooCfg(specs, i, containerData, cfg.tickTime) + cfg.extendedTypesCfg()
	entrypoint, jvmflags, err := b.dockerJVM(ctx, cfg)
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
			testcontainers.ContainerFile{Reader: strings.NewReader(strconv.Itoa(s.id) + "\n"), ContainerFilePath: containerData + "/myid", FileMode: 0o644},
		),
		testcontainers.WithEnv(map[string]string{
			// Read by the official image's scripts; ours has its flags built in.
			"JVMFLAGS":         jvmflags,
			"ZOO_CLIENT_PORT":  strconv.Itoa(s.clientPort),
			"ZOO_MY_ID":        strconv.Itoa(s.id),
			"ZOO_4LW_COMMANDS": "*",
		}),
		testcontainers.WithLabels(ownerLabels()),
	}
	if cfg.logWriter != nil {
		opts = append(opts, testcontainers.WithLogConsumers(logConsumer{cfg.logWriter}))
	}
	req := testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{Image: b.image, Entrypoint: entrypoint},
		Started:          true,
	}
	for _, o := range opts {
		if err := o.Customize(&req); err != nil {
			return nil, fmt.Errorf("zktest: docker request: %w", err)
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
		return nil, fmt.Errorf("zktest: docker provider: %w", err)
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
		return nil, fmt.Errorf("zktest: docker run %s: %w", b.image, err)
	}
	return &dockerServer{address: s.addr(), ctr: ctr, cli: b.cli}, nil
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

func (s *dockerServer) addr() string { return s.address }

func (s *dockerServer) start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("zktest: server %s closed", s.address)
	}
	return s.ctr.Start(ctx)
}

func (s *dockerServer) kill() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.cli.ContainerKill(ctx, s.ctr.GetContainerID(), client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		return fmt.Errorf("zktest: docker kill %s: %w", s.address, err)
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
			return fmt.Errorf("zktest: docker kill %s: container still running: %w", s.address, ctx.Err())
		case <-tick.C:
		}
	}
}

func (s *dockerServer) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := s.cli.ContainerPause(ctx, s.ctr.GetContainerID(), client.ContainerPauseOptions{})
	return err
}

func (s *dockerServer) cont() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := s.cli.ContainerUnpause(ctx, s.ctr.GetContainerID(), client.ContainerUnpauseOptions{})
	return err
}

func (s *dockerServer) exited() <-chan struct{} { return nil }

func (s *dockerServer) logTail(n int) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
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

func (s *dockerServer) close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A paused container cannot be killed until it is resumed.
	_, _ = s.cli.ContainerUnpause(ctx, s.ctr.GetContainerID(), client.ContainerUnpauseOptions{})
	return s.ctr.Terminate(ctx)
}
