package zkrecipes

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// closedPort returns a loopback address nothing listens on: a port the OS
// handed out and that was closed again, so a dial is refused.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// Connect to a port where no server listens says why, in its error, not
// only in a log: the server and "connection refused", while still
// matching ctx's error (issue 42, defect 5).
func TestConnectToAClosedPortSaysTheConnectionWasRefused(t *testing.T) {
	addr := closedPort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	s, err := Connect(ctx, []string{addr})
	require.Nil(t, s)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, ErrNoServerAccepted)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	require.ErrorContains(t, err, addr+": dial tcp "+addr+": connect: connection refused")
}

// The error of a wait that ctx ended names what waited, says when the
// Session had no connection and why each server failed, and matches
// ctx's error and each reason; named again, it keeps one name.
func TestWaitErrorNamesTheWaitAndMatchesCtxAndEachServersReason(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	err := error(&waitError{what: "acquisition of /locks/a", err: context.DeadlineExceeded, cutOff: true,
		servers: []ServerError{{"127.0.0.1:1", refused}, {"127.0.0.1:2", errors.New("zkrecipes: resolve x: no such host")}}})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	require.NotErrorIs(t, err, context.Canceled)
	require.Equal(t, "zkrecipes: acquisition of /locks/a: context deadline exceeded while disconnected: "+
		"127.0.0.1:1: dial tcp: connection refused; 127.0.0.1:2: resolve x: no such host", err.Error())

	ctx, cancel := context.WithCancel(context.Background())
	s := &Session{} // never connected, made by no Connect: no server to report
	require.Same(t, refused, s.waitFailed(ctx, "acquisition of /a", refused), "ctx has not ended")
	cancel()
	require.Same(t, refused, s.waitFailed(ctx, "acquisition of /a", refused), "not ctx's error")
	inner := s.waitFailed(ctx, "acquisition of /sem/locks", ctx.Err())
	err = s.waitFailed(ctx, "semaphore acquisition of /sem", inner)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, "zkrecipes: semaphore acquisition of /sem: context canceled while disconnected", err.Error())
}
