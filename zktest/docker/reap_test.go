package docker

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// goneProcess starts and ends a process and returns its pid and start time.
func goneProcess(t *testing.T) (pid int, start string) {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	require.NoError(t, cmd.Start())
	pid = cmd.Process.Pid
	start = processStart(pid)
	require.NotEmpty(t, start)
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	return pid, start
}

func TestOrphanedContainersAreThoseOfGoneProcessesOnThisHost(t *testing.T) {
	host, err := os.Hostname()
	require.NoError(t, err)
	self := ownerLabels()
	require.NotEmpty(t, self[labelPIDStart], "this process's start time is read from /proc")
	require.False(t, orphaned(self, host), "a live process's container")

	pid, start := goneProcess(t)
	gone := map[string]string{labelZKTest: "1", labelHost: host, labelPID: strconv.Itoa(pid), labelPIDStart: start}
	require.True(t, orphaned(gone, host), "a gone process's container")
	require.False(t, orphaned(gone, host+"-other"), "a container of another host")

	reused := map[string]string{labelZKTest: "1", labelHost: host, labelPID: strconv.Itoa(os.Getpid()), labelPIDStart: start}
	require.True(t, orphaned(reused, host), "a pid reused by another process")

	older := map[string]string{labelZKTest: "1", labelPID: strconv.Itoa(pid)}
	require.False(t, orphaned(older, host), "no host and start time: left alone")
}

// TestDocker_ReapsTheContainersOfGoneTestProcesses runs only with
// ZK_TEST_BACKEND=docker (make test does, after building the local image).
func TestDocker_ReapsTheContainersOfGoneTestProcesses(t *testing.T) {
	if os.Getenv("ZK_TEST_BACKEND") != zktest.BackendDocker {
		t.Skip("set ZK_TEST_BACKEND=docker to run the docker backend test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := newDockerBackend(ctx)
	require.NoError(t, err)
	host, err := os.Hostname()
	require.NoError(t, err)

	pid, start := goneProcess(t)
	labels := func(pid int, start string) map[string]string {
		return map[string]string{labelZKTest: "1", labelHost: host, labelPID: strconv.Itoa(pid), labelPIDStart: start}
	}
	create := func(l map[string]string) string {
		r, err := b.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Config:     &container.Config{Image: b.image, Labels: l},
			HostConfig: &container.HostConfig{NetworkMode: "host"},
		})
		require.NoError(t, err)
		t.Cleanup(func() {
			_, _ = b.cli.ContainerRemove(context.Background(), r.ID, client.ContainerRemoveOptions{Force: true})
		})
		return r.ID
	}
	orphan := create(labels(pid, start))
	live := create(ownerLabels())

	n, err := b.reapOrphans(ctx)
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, 1)
	_, err = b.cli.ContainerInspect(ctx, orphan, client.ContainerInspectOptions{})
	require.Error(t, err, "the gone process's container is removed")
	_, err = b.cli.ContainerInspect(ctx, live, client.ContainerInspectOptions{})
	require.NoError(t, err, "this process's container stays")
}
