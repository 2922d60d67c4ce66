package zkr_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/discovery"
)

func TestZkrRegister_RegistersWhileTheCommandRunsAndServicesListsIt(t *testing.T) {
	c := server(t)
	base := testPath(t)
	dir := t.TempDir()
	stop := dir + "/stop"
	reg := start(t, c.ConnectString(), "register", "api", "127.0.0.1:8080", "--base", base, "--id", "i-1",
		"--payload", `{"zone":"z1"}`, "--uri-spec", "{scheme}://{address}:{port}/", "--",
		"sh", "-c", `echo "$ZKR_SERVICE_NAME $ZKR_INSTANCE_ID"; while [ ! -e `+stop+` ]; do sleep 0.05; done; exit 3`)
	conn := raw(t, c)
	require.Eventually(t, func() bool { return len(children(t, conn, base+"/api")) == 1 }, 20*time.Second, 10*time.Millisecond)

	data, st, err := conn.Get(base + "/api/i-1")
	require.NoError(t, err)
	assert.NotZero(t, st.EphemeralOwner, "a dynamic instance is ephemeral")
	inst, err := discovery.Unmarshal(data)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", inst.Address)
	assert.Equal(t, 8080, inst.Port)
	assert.JSONEq(t, `{"zone":"z1"}`, string(inst.Payload))

	code, out, stderr := run(t, c.ConnectString(), "services", "--base", base)
	require.Zero(t, code, stderr)
	assert.Contains(t, out, "SERVICE")
	line := strings.Fields(strings.Split(strings.TrimSpace(out), "\n")[1])
	assert.Equal(t, []string{"api", "i-1", "127.0.0.1:8080", "-", "DYNAMIC"}, line[:5])
	assert.Equal(t, "http://127.0.0.1:8080/", line[6])

	code, out, stderr = run(t, c.ConnectString(), "services", "api", "--base", base, "--json")
	require.Zero(t, code, stderr)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &m), out)
	assert.Equal(t, "i-1", m["id"])

	require.NoError(t, os.WriteFile(stop, nil, 0o644))
	assert.Equal(t, 3, reg.wait(t, 20*time.Second), "zkr exits with the command's status")
	assert.Contains(t, reg.stdout.String(), "api i-1")
	assert.Empty(t, children(t, conn, base+"/api"), "unregistered when the command ends")
}

func TestZkrRegister_RejectsBadArguments(t *testing.T) {
	c := server(t)
	for _, args := range [][]string{
		{"register", "api", "nohostport", "--", "true"},
		{"register", "api", "h:0", "--", "true"},
		{"register", "api", "h:1"},
		{"register", "api", "h:1", "--payload", "{", "--", "true"},
		{"register", "a/b", "h:1", "--base", testPath(t), "--", "true"},
		{"services", "a", "b"},
	} {
		code, _, _ := run(t, c.ConnectString(), args...)
		assert.Equal(t, 64, code, "%v", args)
	}
}
