package zkrecipes

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/go-zookeeper/zk"
)

// A Session that ended on a failure no redial can mend closes its
// connection, which can cut a request short before that request's own
// reply says why (a server requiring SASL answers it, then closes): the
// request fails with the Session's reason, not "connection closed".
func TestRequestCutShortByAFatalEndSaysWhy(t *testing.T) {
	s := &Session{fatal: newSignal(), closedCh: make(chan struct{})}
	s.fatal.fire(fmt.Errorf("%w (zk: unknown error: -124)", ErrSASLRequired))
	_, err := checked(s, "exists", "/a", func() (bool, error) { return false, zk.ErrConnectionClosed })
	if !errors.Is(err, ErrSASLRequired) {
		t.Fatalf("err = %v, want ErrSASLRequired", err)
	}
	if errors.Is(err, zk.ErrConnectionClosed) {
		t.Fatalf("err = %v: a retry loop would wait for a reconnection that never comes", err)
	}
	// The request may have reached the server before the close: a write
	// cut short so reports its outcome unknown, as one Close cut short.
	if !replyLost(context.Background(), err) {
		t.Fatalf("err = %v: a write cut short would be reported as not applied", err)
	}
	if errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v: the Session was not closed", err)
	}

	live := &Session{fatal: newSignal(), closedCh: make(chan struct{})}
	_, err = checked(live, "exists", "/a", func() (bool, error) { return false, zk.ErrConnectionClosed })
	if !errors.Is(err, zk.ErrConnectionClosed) {
		t.Fatalf("a live Session's cut request: err = %v, want zk.ErrConnectionClosed", err)
	}
}
