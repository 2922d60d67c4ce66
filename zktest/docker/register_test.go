package docker_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/zktest"
	_ "github.com/zkrecipes/zkrecipes/zktest/docker"
)

// Importing the package is what makes "docker" a backend: zktest lists it among the
// registered ones (asked for a name it does not know, it names them; no engine is
// contacted).
func TestImportRegistersTheDockerBackend(t *testing.T) {
	_, err := zktest.StartCluster(context.Background(), zktest.WithBackend("no-such-backend"))
	require.Error(t, err)
	require.NotErrorIs(t, err, zktest.ErrNoBackend)
	require.Contains(t, err.Error(), "registered with RegisterBackend: "+zktest.BackendDocker)
}
