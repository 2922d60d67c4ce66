package docker_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/zktest"
	_ "github.com/zkrecipes/zkrecipes/zktest/docker"
)

// Importing the package is what makes "docker" a backend: with no engine at the socket
// named, the start reports the engine missing (ErrNoBackend, so Start skips outside CI),
// not the package.
func TestImportRegistersTheDockerBackend(t *testing.T) {
	if os.Getenv("ZK_TEST_BACKEND") == zktest.BackendDocker {
		// testcontainers reads DOCKER_HOST once a process: with the Docker tests in
		// the same process, the engine they use would answer here.
		t.Skip("runs without ZK_TEST_BACKEND=docker (scripts/test.sh's zktest stage)")
	}
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-engine.sock"))
	_, err := zktest.StartCluster(context.Background(), zktest.WithBackend(zktest.BackendDocker))
	require.ErrorIs(t, err, zktest.ErrNoBackend)
	require.Contains(t, err.Error(), "docker backend")
	require.NotContains(t, err.Error(), zktest.DockerPackage, "the package is linked in: no advice to import it")
}
