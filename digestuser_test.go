package zkrecipes

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// A digest user name with ':' cannot be authenticated as itself (ZooKeeper
// splits user:password at the first ':'), so neither WithDigestAuth nor a
// DigestACL for it is taken: Connect fails at once with ErrDigestUser,
// which also matches ErrInvalidArgument, and never shows the password.
func TestDigestUserWithColonIsRefusedWithErrDigestUser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for name, opt := range map[string]SessionOption{
		"WithDigestAuth":       WithDigestAuth("alice:s3cret", ""),
		"WithDigestAuth colon": WithDigestAuth("ali:ce", "s3cret"),
		"DigestACL":            WithACL([]ACL{DigestACL("ali:ce", "s3cret", PermAll)}),
	} {
		start := time.Now()
		s, err := Connect(ctx, []string{"127.0.0.1:1"}, opt)
		if s != nil {
			_ = s.Close()
		}
		if !errors.Is(err, ErrDigestUser) || !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: got %v, want ErrDigestUser", name, err)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: the error shows the password: %v", name, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s: refused after %v, not before dialling", name, d)
		}
	}
	// The ACL of a user without ':' passes.
	if _, err := buildConfig([]SessionOption{WithDigestAuth("alice", "a:b"), WithACL([]ACL{DigestACL("alice", "a:b", PermAll)})}); err != nil {
		t.Fatal(err)
	}
}
