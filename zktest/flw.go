package zktest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// FourLetterTimeout bounds every four-letter-word exchange in this package, even when
// the caller's context has no deadline, so that a stopped (SIGSTOP) server cannot hang
// a caller.
const FourLetterTimeout = 3 * time.Second

// FourLetterWord sends the four-letter command cmd (e.g. "srvr", "mntr", "ruok") to the
// ZooKeeper server at the loopback address server and returns its whole reply. It
// fails when ctx ends, after [FourLetterTimeout], when the address is not loopback
// ([ErrNotLoopback]), or when the server closes the connection without a reply (the
// command is not in 4lw.commands.whitelist, or the server is not running).
func FourLetterWord(ctx context.Context, server, cmd string) (string, error) {
	if len(cmd) != 4 {
		return "", fmt.Errorf("zktest: four-letter word %q is not four letters", cmd)
	}
	ctx, cancel := boundedContext(ctx, FourLetterTimeout)
	defer cancel()
	conn, err := dialLoopback(ctx, server)
	if err != nil {
		return "", fmt.Errorf("zktest: %s to %s: %w", cmd, server, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := io.WriteString(conn, cmd); err != nil {
		return "", fmt.Errorf("zktest: %s to %s: %w", cmd, server, err)
	}
	b, err := io.ReadAll(conn)
	if err != nil {
		return "", fmt.Errorf("zktest: %s from %s: %w", cmd, server, err)
	}
	if len(b) == 0 {
		return "", fmt.Errorf("zktest: %s from %s: empty reply (not whitelisted or not serving)", cmd, server)
	}
	return string(b), nil
}

// Ruok sends "ruok" and returns nil when the server answers "imok". A server that runs
// but is not yet part of a quorum still answers "imok"; use [Srvr] to learn whether it
// serves clients.
func Ruok(ctx context.Context, server string) error {
	s, err := FourLetterWord(ctx, server, "ruok")
	if err != nil {
		return err
	}
	if strings.TrimSpace(s) != "imok" {
		return fmt.Errorf("zktest: ruok from %s: unexpected reply %q", server, s)
	}
	return nil
}

// Srvr sends "srvr" and returns its "Key: value" lines as a map (keys such as "Mode",
// "Zxid", "Node count"). A server serves clients iff the map has a "Mode" entry; a
// server without quorum answers "This ZooKeeper instance is not currently serving
// requests", which is returned as an error.
func Srvr(ctx context.Context, server string) (map[string]string, error) {
	s, err := FourLetterWord(ctx, server, "srvr")
	if err != nil {
		return nil, err
	}
	m := parseLines(s, ":")
	if _, ok := m["Mode"]; !ok {
		return nil, fmt.Errorf("zktest: srvr from %s: not serving: %q", server, strings.TrimSpace(s))
	}
	return m, nil
}

// Mntr sends "mntr" and returns its tab-separated lines as a map (keys such as
// "zk_server_state", "zk_znode_count", "zk_followers" on a leader). It fails like
// [Srvr] when the server does not serve.
func Mntr(ctx context.Context, server string) (map[string]string, error) {
	s, err := FourLetterWord(ctx, server, "mntr")
	if err != nil {
		return nil, err
	}
	m := parseLines(s, "\t")
	if _, ok := m["zk_server_state"]; !ok {
		return nil, fmt.Errorf("zktest: mntr from %s: not serving: %q", server, strings.TrimSpace(s))
	}
	return m, nil
}

func parseLines(s, sep string) map[string]string {
	m := make(map[string]string)
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), sep)
		if !ok {
			continue
		}
		m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return m
}
