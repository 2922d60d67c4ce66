package zkrecipes

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestProtectedNamesUseCanonicalUUIDs(t *testing.T) {
	canonical := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		u := newUUID()
		assert.Regexp(t, canonical, u)
		assert.False(t, seen[u])
		seen[u] = true
	}
	name := protectedName("0f1e2d3c-aaaa-4bbb-8ccc-123456789abc", "lock-")
	assert.Equal(t, "_c_0f1e2d3c-aaaa-4bbb-8ccc-123456789abc-lock-", name)
	assert.Len(t, name, len("_c_")+36+len("-lock-"))
}

func TestConnStateNames(t *testing.T) {
	for st, want := range map[ConnState]string{StateConnected: "CONNECTED", StateSuspended: "SUSPENDED",
		StateReconnected: "RECONNECTED", StateLost: "LOST", StateClosed: "CLOSED", StateConnecting: "CONNECTING"} {
		assert.Equal(t, want, st.String())
	}
	assert.Equal(t, "LoseOnSuspended", LoseOnSuspended.String())
}

func TestDigestACLMatchesZooKeeperFormat(t *testing.T) {
	// ZooKeeper's DigestAuthenticationProvider: user:base64(sha1(user:password)).
	a := DigestACL("alice", "secret", PermAll)
	assert.Equal(t, "digest", a.Scheme)
	assert.Regexp(t, `^alice:[A-Za-z0-9+/]{27}=$`, a.ID)
}
