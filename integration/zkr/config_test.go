package zkr_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// zkr config prints the ensemble: every member with its id, role and
// client address, the configuration's version, and the connection string
// clients follow; --json gives the same.
func TestZkrConfig_PrintsTheEnsemble(t *testing.T) {
	server(t)
	ens := zktest.Start(t, zktest.WithSize(3), zktest.WithReconfig(0))
	servers := ens.Servers()
	code, out, errOut := run(t, servers[1], "config")
	require.Equal(t, 0, code, errOut)
	var rows [][]string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 5 && f[0] != "ID" && f[0] != "version" {
			rows = append(rows, f[:3])
		}
	}
	require.Equal(t, [][]string{{"1", "participant", servers[0]}, {"2", "participant", servers[1]}, {"3", "participant", servers[2]}},
		rows, "a row per member: id, role, client address, in:\n%s", out)
	require.Contains(t, out, "connection string: "+strings.Join(servers, ","))

	code, out, errOut = run(t, servers[0], "config", "--json")
	require.Equal(t, 0, code, errOut)
	var rep struct {
		Version string   `json:"version"`
		Servers []string `json:"servers"`
		Members []struct {
			ID     int64  `json:"id"`
			Role   string `json:"role"`
			Client string `json:"client"`
			Line   string `json:"line"`
		} `json:"members"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, servers, rep.Servers)
	require.Len(t, rep.Members, 3)
	for i, m := range rep.Members {
		require.Equal(t, int64(i+1), m.ID)
		require.Equal(t, "participant", m.Role)
		require.Equal(t, servers[i], m.Client)
		require.Equal(t, ens.ServerLine(i), m.Line)
	}
	require.NotEmpty(t, rep.Version)
	require.NotEqual(t, "0", rep.Version)

	// A standalone server lists no member.
	code, out, errOut = run(t, server(t).ConnectString(), "config")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "no members listed")
}
