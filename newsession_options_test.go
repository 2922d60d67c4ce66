package zkrecipes

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
)

// Issue 42, defect 3: NewSession refuses every option only Connect
// honours, rather than ignoring it, and adopts nothing.
func TestNewSessionRefusesConnectOnlyOptions(t *testing.T) {
	for name, opt := range map[string]SessionOption{
		"WithTLS":              WithTLS(&tls.Config{}),
		"WithSASL":             WithSASL(DigestMD5("u", "p")),
		"WithDialer":           WithDialer(net.DialTimeout),
		"WithWireLayer":        WithWireLayer(true),
		"WithResolver":         WithResolver(net.DefaultResolver),
		"WithEnsembleTracking": WithEnsembleTracking(true),
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			// A connection that never connects: a refusal must come before
			// the Session waits on it.
			s, err := NewSession(ctx, new(zk.Conn), make(chan zk.Event), WithSessionTimeout(10*time.Second), opt)
			assert.Nil(t, s)
			assert.ErrorIs(t, err, ErrConnectOnlyOption)
			assert.ErrorIs(t, err, ErrInvalidArgument)
			if assert.Error(t, err) {
				assert.True(t, strings.HasPrefix(err.Error(), "zkrecipes: "), err.Error())
				assert.Contains(t, err.Error(), "use Connect")
				assert.Contains(t, err.Error(), name)
			}
		})
	}
}
