package zkrecipes

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// ConfigPath is the node where a ZooKeeper ensemble (3.5 and later) keeps
// its dynamic configuration. A Session may read and watch it (GetData,
// NodeCache, PersistentWatch, WatchData), whatever its namespace: the path
// names the ensemble's own node, not one under the namespace. Nothing may
// write it; change it with Reconfig or IncrementalReconfig.
const ConfigPath = "/zookeeper/config"

// MemberRole is the part an ensemble member plays in the quorum.
type MemberRole int

const (
	// RoleParticipant: the member votes and may lead.
	RoleParticipant MemberRole = iota + 1
	// RoleObserver: the member serves clients and follows the leader
	// without voting.
	RoleObserver
)

func (r MemberRole) String() string {
	switch r {
	case RoleParticipant:
		return "participant"
	case RoleObserver:
		return "observer"
	}
	return fmt.Sprintf("MemberRole(%d)", int(r))
}

// EnsembleMember is one server of an ensemble's configuration, as a
// "server.N" line of ConfigPath states it.
type EnsembleMember struct {
	ID   int64 // the N of "server.N": the server's myid
	Role MemberRole
	// Quorum and Election are the member's quorum and leader-election
	// addresses (host:port), one each per address the member listens on
	// (ZooKeeper 3.6's multi-address form gives several).
	Quorum, Election []string
	// Client is the address (host:port) clients dial, "" when the line
	// gives none. A client host of 0.0.0.0 or :: (the server listens on
	// every address) is replaced with the member's first quorum host,
	// as Curator's EnsembleTracker does.
	Client string
	// SecureClient is the member's TLS client address, "" when none.
	SecureClient string
	// Line is the member's line as the configuration gives it, the form
	// Reconfig and IncrementalReconfig take ("server.N=...").
	Line string
}

// EnsembleConfig is an ensemble's dynamic configuration, parsed from
// ConfigPath (see ParseEnsembleConfig and Session.Config).
type EnsembleConfig struct {
	// Members are the servers, in order of ID.
	Members []EnsembleMember
	// Version is the configuration's version (its "version=" line, the
	// zxid of the reconfiguration that made it), 0 when it has none. Pass
	// it to Reconfig to change the configuration only if nobody has since.
	Version int64
}

// Servers returns the members' client addresses (host:port) in order of
// ID, members without one left out: the list a Session following the
// ensemble dials (see WithEnsembleTracking), and Connect takes.
func (c *EnsembleConfig) Servers() []string {
	var out []string
	for _, m := range c.Members {
		if m.Client != "" {
			out = append(out, m.Client)
		}
	}
	return out
}

// ParseEnsembleConfig parses the data of ConfigPath: "server.N=" lines of
// the form
//
//	host:quorumPort:electionPort[:role][|host:quorumPort:electionPort[:role]...][;[clientHost:]clientPort[;[secureHost:]securePort]]
//
// (IPv6 hosts in brackets; role "participant", the default, or
// "observer"), and an optional "version=" line in hexadecimal. Other keys
// (group.N, weight.N) are ignored. It fails with an error matching
// ErrInvalidArgument that names the line at fault, for a server line that
// is not of that form or a server id given twice.
func ParseEnsembleConfig(data []byte) (*EnsembleConfig, error) {
	cfg := &EnsembleConfig{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		if !ok {
			return nil, invalidArg("ensemble config line %d %q: want key=value", n, line)
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch {
		case key == "version":
			v, err := strconv.ParseInt(val, 16, 64)
			if err != nil {
				return nil, invalidArg("ensemble config line %d %q: version must be hexadecimal", n, line)
			}
			cfg.Version = v
		case strings.HasPrefix(key, "server."):
			id, err := strconv.ParseInt(key[len("server."):], 10, 64)
			if err != nil {
				return nil, invalidArg("ensemble config line %d %q: server id must be a number", n, line)
			}
			m, err := parseMember(id, val)
			if err != nil {
				return nil, invalidArg("ensemble config line %d %q: %v", n, line, err)
			}
			if slices.ContainsFunc(cfg.Members, func(o EnsembleMember) bool { return o.ID == id }) {
				return nil, invalidArg("ensemble config line %d %q: server id %d given twice", n, line, id)
			}
			m.Line = key + "=" + val
			cfg.Members = append(cfg.Members, m)
		}
	}
	if err := sc.Err(); err != nil { // a line longer than the scanner's 64 KiB
		return nil, invalidArg("ensemble config line %d: %v", n+1, err)
	}
	slices.SortFunc(cfg.Members, func(a, b EnsembleMember) int { return cmp.Compare(a.ID, b.ID) })
	return cfg, nil
}

// parseMember parses the value of a "server.N" line, as ZooKeeper's
// QuorumServer does.
func parseMember(id int64, val string) (EnsembleMember, error) {
	m := EnsembleMember{ID: id, Role: RoleParticipant}
	parts := strings.Split(val, ";")
	if len(parts) > 3 {
		return m, fmt.Errorf("more than three ';'-separated parts")
	}
	var role string
	for i, a := range strings.Split(parts[0], "|") {
		f, err := splitHostPorts(a)
		if err != nil {
			return m, err
		}
		if len(f) != 3 && len(f) != 4 {
			return m, fmt.Errorf("want host:quorumPort:electionPort[:role], got %q", a)
		}
		for _, p := range f[1:3] {
			if !validPort(p) {
				return m, fmt.Errorf("bad port %q", p)
			}
		}
		if f[1] == f[2] {
			return m, fmt.Errorf("quorum and election ports must differ")
		}
		r := ""
		if len(f) == 4 {
			r = f[3]
			if r != "participant" && r != "observer" {
				return m, fmt.Errorf("unknown role %q (want participant or observer)", r)
			}
		}
		if i > 0 && r != role {
			return m, fmt.Errorf("addresses with different roles")
		}
		role = r
		m.Quorum = append(m.Quorum, net.JoinHostPort(f[0], f[1]))
		m.Election = append(m.Election, net.JoinHostPort(f[0], f[2]))
	}
	if role == "observer" {
		m.Role = RoleObserver
	}
	host, _, _ := net.SplitHostPort(m.Quorum[0])
	var err error
	if len(parts) > 1 {
		if m.Client, err = clientAddr(parts[1], host); err != nil {
			return m, err
		}
	}
	if len(parts) > 2 {
		if m.SecureClient, err = clientAddr(parts[2], host); err != nil {
			return m, err
		}
	}
	return m, nil
}

// clientAddr parses a client part, "[host:]port" ("" for none): a missing
// host, or one that means every address, is the member's quorum host.
func clientAddr(s, serverHost string) (string, error) {
	if s == "" {
		return "", nil
	}
	f, err := splitHostPorts(s)
	if err != nil {
		return "", err
	}
	var host, port string
	switch len(f) {
	case 1:
		host, port = serverHost, f[0]
	case 2:
		host, port = f[0], f[1]
	default:
		return "", fmt.Errorf("want [host:]port for the client address, got %q", s)
	}
	if !validPort(port) {
		return "", fmt.Errorf("bad client port %q", port)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = serverHost
	}
	return net.JoinHostPort(host, port), nil
}

// splitHostPorts splits "host:a:b..." on ':', a host in brackets ("[::1]")
// kept whole, without them. An empty host or field is an error.
func splitHostPorts(s string) ([]string, error) {
	var f []string
	rest := s
	if strings.HasPrefix(rest, "[") {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return nil, fmt.Errorf("unclosed '[' in %q", s)
		}
		f = append(f, rest[1:end])
		rest = rest[end+1:]
		if rest != "" && rest[0] != ':' {
			return nil, fmt.Errorf("want ':' after ']' in %q", s)
		}
		if rest != "" {
			f = append(f, strings.Split(rest[1:], ":")...)
		}
	} else {
		f = strings.Split(rest, ":")
	}
	for _, x := range f {
		if x == "" || strings.ContainsAny(x, " \t\r\n/,;|[]") {
			return nil, fmt.Errorf("empty field, or a space or separator in one, in %q", s)
		}
	}
	return f, nil
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n > 0 && n <= 65535
}
