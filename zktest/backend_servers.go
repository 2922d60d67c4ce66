package zktest

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// serversBackend attaches to an ensemble that runs outside this process.
type serversBackend struct {
	addrs []string
}

func (b *serversBackend) name() string { return BackendServers }

func serversConfigured() bool { return strings.TrimSpace(os.Getenv("ZK_SERVERS")) != "" }

// newServersBackend parses ZK_SERVERS ("127.0.0.1:2181,127.0.0.1:2182"). Only
// loopback addresses are accepted; anything else is a configuration error, not a
// missing backend.
func newServersBackend(cfg config) (*serversBackend, error) {
	raw := strings.TrimSpace(os.Getenv("ZK_SERVERS"))
	if raw == "" {
		return nil, unavailable("servers backend: ZK_SERVERS is not set")
	}
	var addrs []string
	for _, a := range strings.Split(raw, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		n, err := loopbackAddr(a)
		if err != nil {
			return nil, fmt.Errorf("zktest: ZK_SERVERS: %w (the harness only talks to 127.0.0.0/8)", err)
		}
		addrs = append(addrs, n)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("zktest: ZK_SERVERS=%q lists no address", raw)
	}
	if cfg.sizeSet && cfg.size > len(addrs) {
		return nil, unavailable("servers backend: test needs %d servers, ZK_SERVERS lists %d", cfg.size, len(addrs))
	}
	if cfg.sizeSet {
		addrs = addrs[:cfg.size]
	}
	return &serversBackend{addrs: addrs}, nil
}

func (b *serversBackend) launch(context.Context, string, []serverSpec, config) ([]member, error) {
	ms := make([]member, len(b.addrs))
	for i, a := range b.addrs {
		ms[i] = externalServer(a)
	}
	return ms, nil
}

// externalServer is a server this process does not own: no lifecycle control.
type externalServer string

func (s externalServer) addr() string                { return string(s) }
func (s externalServer) start(context.Context) error { return ErrUnsupported }
func (s externalServer) kill() error                 { return ErrUnsupported }
func (s externalServer) stop() error                 { return ErrUnsupported }
func (s externalServer) cont() error                 { return ErrUnsupported }
func (s externalServer) exited() <-chan struct{}     { return nil }
func (s externalServer) logTail(int) string          { return "" }
func (s externalServer) close() error                { return nil }
