package secure_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/zktest"
)

// tamperProxy forwards loopback connections to target and replaces old
// with new (of the same length) in every frame the server sends: a link
// without TLS that rewrites the DIGEST-MD5 challenge.
func tamperProxy(t *testing.T, target string, old, new []byte) string {
	t.Helper()
	require.Len(t, new, len(old))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, s)
			mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(s, c); _ = s.Close() }()
			go func() {
				defer wg.Done()
				defer c.Close()
				for {
					var h [4]byte
					if _, err := io.ReadFull(s, h[:]); err != nil {
						return
					}
					body := make([]byte, binary.BigEndian.Uint32(h[:]))
					if _, err := io.ReadFull(s, body); err != nil {
						return
					}
					body = bytes.ReplaceAll(body, old, new)
					if _, err := c.Write(append(h[:], body...)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// A link that strips charset=utf-8 from the server's DIGEST-MD5 challenge
// makes a password beyond Latin-1 unusable: Connect fails with
// ErrAuthFailed, and neither its error nor the Session's logs (Debug and
// up) show the password.
func TestSASLTamperedChallengeNeverShowsThePassword(t *testing.T) {
	srv := enforced.get(t)
	const password = "пароль-✓-secret"
	addr := tamperProxy(t, srv.Addr, []byte("charset=utf-8"), []byte("charsex=utf-8"))
	var logs zktest.LogBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	_, err := connectErr(t, addr, zr.WithSASL(zr.DigestMD5("alice", password)), zr.WithLogger(log),
		zr.WithSessionTimeout(4*time.Second))
	require.ErrorIs(t, err, zr.ErrAuthFailed)
	require.NotContains(t, err.Error(), password)
	require.NotContains(t, logs.String(), password)
	require.Contains(t, logs.String(), "ISO 8859-1", "the logs say why")

	// Untampered, the same client passes the challenge (and is refused
	// for the password only), still without showing it.
	_, err = connectErr(t, srv.Addr, zr.WithSASL(zr.DigestMD5("alice", password)), zr.WithLogger(log))
	require.ErrorIs(t, err, zr.ErrAuthFailed)
	require.NotContains(t, err.Error(), password)
	require.NotContains(t, logs.String(), password)
}
