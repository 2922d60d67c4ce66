package secure_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// A link that strips charset=utf-8 from the server's DIGEST-MD5 challenge
// makes a password beyond Latin-1 unusable: Connect fails with
// ErrAuthFailed, and neither its error nor the Session's logs (Debug and
// up) show the password.
func TestSASLTamperedChallengeNeverShowsThePassword(t *testing.T) {
	srv := enforced.get(t)
	const password = "пароль-✓-secret"
	proxy := zktest.NewProxy(t, srv.Addr)
	proxy.RewriteReplies([]byte("charset=utf-8"), []byte("charsex=utf-8"))
	var logs zktest.LogBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	_, err := connectErr(t, proxy.Addr(), zr.WithSASL(zr.DigestMD5("alice", password)), zr.WithLogger(log),
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
