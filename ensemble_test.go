package zkrecipes

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every form of a server line ZooKeeper writes or accepts parses to the
// member it names; the client address a Session dials is the one given,
// or the server's host for a missing or any-address client host.
func TestParseEnsembleConfigReadsEveryFormOfServerLine(t *testing.T) {
	data := "server.3=zk-3.zk-hs:2888:3888:observer;0.0.0.0:2181\n" +
		"server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\n" +
		"server.2=zk-2.zk-hs:2888:3888;2182\n" +
		"server.4=[::1]:2888:3888:participant;[::1]:2183\n" +
		"server.5=[fe80::1]:2888:3888;[::]:2184\n" +
		"server.6=10.0.0.6:2888:3888\n" +
		"server.7=a:2888:3888|b:2889:3889;2185;b:2281\n" +
		"group.1=1:2:4\nweight.1=1\n" +
		"version=10000000a\n"
	cfg, err := ParseEnsembleConfig([]byte(data))
	require.NoError(t, err)
	require.Equal(t, int64(0x10000000a), cfg.Version)
	type m struct {
		id     int64
		role   MemberRole
		client string
	}
	var got []m
	for _, x := range cfg.Members {
		got = append(got, m{x.ID, x.Role, x.Client})
	}
	require.Equal(t, []m{
		{1, RoleParticipant, "127.0.0.1:2181"},
		{2, RoleParticipant, "zk-2.zk-hs:2182"},
		{3, RoleObserver, "zk-3.zk-hs:2181"},
		{4, RoleParticipant, "[::1]:2183"},
		{5, RoleParticipant, "[fe80::1]:2184"},
		{6, RoleParticipant, ""},
		{7, RoleParticipant, "a:2185"},
	}, got)
	require.Equal(t, []string{"127.0.0.1:2181", "zk-2.zk-hs:2182", "zk-3.zk-hs:2181", "[::1]:2183", "[fe80::1]:2184", "a:2185"},
		cfg.Servers(), "members without a client address left out, in order of id")
	m7 := cfg.Members[6]
	require.Equal(t, []string{"a:2888", "b:2889"}, m7.Quorum)
	require.Equal(t, []string{"a:3888", "b:3889"}, m7.Election)
	require.Equal(t, "b:2281", m7.SecureClient)
	require.Equal(t, "server.7=a:2888:3888|b:2889:3889;2185;b:2281", m7.Line)
	require.Equal(t, []string{"[::1]:2888"}, cfg.Members[3].Quorum)
}

// A standalone server's configuration is empty: no member, version 0.
func TestParseEnsembleConfigOfNothingIsNoMember(t *testing.T) {
	for _, data := range []string{"", "\n", "# comment\n"} {
		cfg, err := ParseEnsembleConfig([]byte(data))
		require.NoError(t, err)
		require.Empty(t, cfg.Members)
		require.Empty(t, cfg.Servers())
		require.Zero(t, cfg.Version)
	}
}

// A line that is not of ZooKeeper's form is refused, typed, naming it.
func TestParseEnsembleConfigRefusesMalformedLines(t *testing.T) {
	for _, bad := range []string{
		"server.1",
		"server.x=a:1:2",
		"server.1=a:1",
		"server.1=a:1:2:3:4",
		"server.1=a:1:1",
		"server.1=a:1:70000",
		"server.1=a:1:2:leader",
		"server.1=:1:2",
		"server.1=[::1:1:2",
		"server.1=[::1]x:1:2",
		"server.1=a:1:2;b:c:3",
		"server.1=a:1:2;0",
		"server.1=a:1:2;b:",
		"server.1=a:1:2:observer|b:3:4:participant",
		"server.1=a:1:2;3;4;5",
		"server.1=a:1:2\nserver.1=b:1:2",
		"version=xyz",
		"server.1=a:1:2;" + strings.Repeat("9", 70000),
	} {
		_, err := ParseEnsembleConfig([]byte(bad))
		require.ErrorIs(t, err, ErrInvalidArgument, "%q", bad)
		require.Contains(t, err.Error(), "ensemble config line", "%q", bad)
	}
}

func FuzzParseEnsembleConfig(f *testing.F) {
	f.Add("server.1=127.0.0.1:2888:3888:participant;0.0.0.0:2181\nversion=100000000")
	f.Add("server.4=[::1]:2888:3888|[::2]:1:2;[::]:2183;x:1")
	f.Fuzz(func(t *testing.T, data string) {
		cfg, err := ParseEnsembleConfig([]byte(data))
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidArgument)
			return
		}
		_, err = normalizeServers(append(cfg.Servers(), "x:1"))
		require.NoError(t, err, "every client address is one Connect takes")
	})
}

// A Session moves to the members' client addresses; a configuration that
// names no client address, or a member at 0.0.0.0 (no server a client
// can dial), or that is not understood, leaves its list as it was.
func TestApplyConfigFollowsOnlyAConfigurationThatNamesDialableServers(t *testing.T) {
	p, logs := testServerList("zk-a:2181", "zk-b:2181")
	require.NoError(t, p.Init([]string{"zk-a:2181", "zk-b:2181"}))
	s := &Session{cfg: defaultSessionConfig(), servers: p}
	s.cfg.log = p.log
	for _, data := range []string{
		"server.1=zk-a:2888:3888\nserver.2=zk-b:2888:3888\nversion=1", // client ports in the static files
		"server.1=0.0.0.0:2888:3888;2181\nserver.2=zk-b:2888:3888;2181\nversion=2",
		"server.1=zk-a:2888",
	} {
		s.applyConfig([]byte(data))
		require.ElementsMatch(t, []string{"zk-a:2181", "zk-b:2181"}, s.Servers(), "%q", data)
	}
	require.Contains(t, logs.String(), "unspecified address")
	require.Contains(t, logs.String(), "not understood")
	s.applyConfig([]byte("server.1=zk-a:2888:3888;2181\nserver.3=zk-c:2888:3888;0.0.0.0:2181\nversion=3"))
	require.ElementsMatch(t, []string{"zk-a:2181", "zk-c:2181"}, s.Servers())
}
