package zktest

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"
)

// loopbackAddr validates addr as host:port on 127.0.0.0/8 and returns it normalised
// to an IP literal. "localhost" maps to 127.0.0.1 without asking a resolver.
func loopbackAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("zktest: bad address %q: %w", addr, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
		return "", fmt.Errorf("zktest: bad port in %q", addr)
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	ip := net.ParseIP(host)
	if ip == nil || ip.To4() == nil || !ip.IsLoopback() {
		return "", fmt.Errorf("%w: %q", ErrNotLoopback, addr)
	}
	return net.JoinHostPort(ip.String(), port), nil
}

// dialLoopback dials addr over TCP after checking it is a loopback address.
func dialLoopback(ctx context.Context, addr string) (net.Conn, error) {
	a, err := loopbackAddr(addr)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", a)
}

// freePorts returns n distinct TCP ports on 127.0.0.1 that were free a moment ago:
// each is bound to 127.0.0.1:0 and closed again. Another process may take a port
// before ZooKeeper binds it; callers retry the start on a bind clash.
func freePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("zktest: picking a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// boundedContext applies a default timeout d to ctx unless ctx ends sooner.
func boundedContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}
