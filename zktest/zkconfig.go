package zktest

import (
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"strings"
	"time"
)

// serverSpec is the address plan of one ensemble member.
type serverSpec struct {
	id         int // myid, 1-based
	clientPort int
	peerPort   int
	electPort  int
	tlsPort    int // secureClientPort; 0: none
}

// planPorts picks OS-chosen free loopback ports for n servers, with a TLS
// client port each when tls is set.
func planPorts(n int, tls bool) ([]serverSpec, error) {
	per := 1
	if n > 1 {
		per = 3
	}
	extra := 0
	if tls {
		extra = n
	}
	ports, err := freePorts(n*per + extra)
	if err != nil {
		return nil, err
	}
	specs := make([]serverSpec, n)
	for i := range specs {
		specs[i] = serverSpec{id: i + 1, clientPort: ports[i*per]}
		if n > 1 {
			specs[i].peerPort, specs[i].electPort = ports[i*per+1], ports[i*per+2]
		}
		if tls {
			specs[i].tlsPort = ports[n*per+i]
		}
	}
	return specs, nil
}

func (s serverSpec) addr() string { return fmt.Sprintf("127.0.0.1:%d", s.clientPort) }

// zooCfg renders zoo.cfg for member self of the ensemble specs, with dataDir as seen
// by the server process. Everything binds 127.0.0.1.
func zooCfg(specs []serverSpec, self int, dataDir string, tick time.Duration) string {
	t := int(tick / time.Millisecond)
	maxSession := max(20*t, 60000)
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=%d\n", t)
	fmt.Fprintf(&b, "initLimit=%d\n", max(50, 10000/t))
	// syncLimit bounds how long a leader and a follower wait for each other's pings
	// before the leader drops the follower, or the follower the leader (and, when a
	// quorum is gone, the ensemble elects again). On a busy machine a JVM is held off
	// the CPU for seconds: 2 s of it made a 3-server ensemble re-elect and not serve a
	// session in 30 s at load 20. 10 s rides that out. A killed server's sockets close
	// at once, so this only delays noticing a stalled (Cluster.Stop) server: a stopped
	// follower's quorum (the leader and the other follower) goes on, and a stopped
	// leader is replaced after 10 s instead of 2 s.
	fmt.Fprintf(&b, "syncLimit=%d\n", max(10, 10000/t))
	fmt.Fprintf(&b, "dataDir=%s\n", dataDir)
	fmt.Fprintf(&b, "clientPort=%d\n", specs[self].clientPort)
	b.WriteString("clientPortAddress=127.0.0.1\n")
	fmt.Fprintf(&b, "minSessionTimeout=%d\n", 2*t)
	fmt.Fprintf(&b, "maxSessionTimeout=%d\n", maxSession)
	b.WriteString("maxClientCnxns=0\n")
	b.WriteString("admin.enableServer=false\n")
	b.WriteString("4lw.commands.whitelist=*\n")
	b.WriteString("forceSync=no\n")
	b.WriteString("preAllocSize=1024\n")
	b.WriteString("autopurge.purgeInterval=0\n")
	if len(specs) > 1 {
		b.WriteString("standaloneEnabled=false\n")
		b.WriteString("reconfigEnabled=false\n")
		b.WriteString("quorumListenOnAllIPs=false\n")
		b.WriteString("cnxTimeout=1000\n")
		for _, s := range specs {
			fmt.Fprintf(&b, "server.%d=127.0.0.1:%d:%d\n", s.id, s.peerPort, s.electPort)
		}
	}
	return b.String()
}

// bindClash reports whether a server log shows a port that was taken meanwhile.
func bindClash(log string) bool {
	return strings.Contains(log, "Address already in use") || strings.Contains(log, "BindException")
}

// line is s's line in a dynamic configuration, client address included.
func (s serverSpec) line() string {
	return fmt.Sprintf("server.%d=127.0.0.1:%d:%d:participant;127.0.0.1:%d", s.id, s.peerPort, s.electPort, s.clientPort)
}

// reconfigCfg renders, for member self of specs (of which the first size
// form the ensemble, the others are spares), zoo.cfg and the dynamic
// configuration file named dynPath (as seen by the server) that
// WithReconfig asks for: the client port is in the dynamic file only.
func reconfigCfg(specs []serverSpec, size, self int, dataDir, dynPath string, tick time.Duration) (zoo, dyn string) {
	var b strings.Builder
	for _, l := range strings.Split(zooCfg(specs[:1], 0, dataDir, tick), "\n") {
		if !strings.HasPrefix(l, "clientPort") && l != "" {
			b.WriteString(l + "\n")
		}
	}
	b.WriteString("standaloneEnabled=false\n")
	b.WriteString("reconfigEnabled=true\n")
	b.WriteString("quorumListenOnAllIPs=false\n")
	b.WriteString("cnxTimeout=1000\n")
	h := sha1.Sum([]byte(SuperUser + ":" + SuperPassword))
	fmt.Fprintf(&b, "DigestAuthenticationProvider.superDigest=%s:%s\n", SuperUser, base64.StdEncoding.EncodeToString(h[:]))
	fmt.Fprintf(&b, "dynamicConfigFile=%s\n", dynPath)
	var d strings.Builder
	for _, s := range specs[:size] {
		d.WriteString(s.line() + "\n")
	}
	if self >= size {
		d.WriteString(specs[self].line() + "\n")
	}
	return b.String(), d.String()
}
