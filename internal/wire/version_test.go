package wire

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Issue 42, defect 6: the layer runs only over a go-zookeeper it was
// tested with, or when the binary cannot tell.
func TestFitsOnlyTheTestedGoZookeeper(t *testing.T) {
	zk := func(v string, r *debug.Module) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: "example.com/app", Version: "(devel)"},
			Deps: []*debug.Module{{Path: "golang.org/x/text", Version: "v0.3.0"}, {Path: zkModule, Version: v, Replace: r}}}
	}
	for _, c := range []struct {
		name string
		bi   *debug.BuildInfo
		fits bool
	}{
		{"no build info", nil, true},
		{"devel, no go-zookeeper listed", &debug.BuildInfo{Main: debug.Module{Path: "example.com/app", Version: "(devel)"}}, true},
		{"the tested version", zk("v1.0.4", nil), true},
		{"an older version", zk("v1.0.3", nil), false},
		{"a newer version", zk("v1.0.5", nil), false},
		{"a pseudo-version", zk("v1.0.5-0.20240101000000-abcdefabcdef", nil), false},
		{"replaced by the tested version", zk("v1.0.3", &debug.Module{Path: zkModule, Version: "v1.0.4"}), true},
		{"replaced by another version", zk("v1.0.4", &debug.Module{Path: zkModule, Version: "v1.0.5"}), false},
		{"replaced by a fork", zk("v1.0.4", &debug.Module{Path: "github.com/someone/zk", Version: "v1.0.4"}), false},
		{"replaced by a local directory", zk("v1.0.4", &debug.Module{Path: "../zk"}), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			fits, found := Fits(c.bi)
			assert.Equal(t, c.fits, fits, "found %q", found)
			if !fits {
				assert.NotEmpty(t, found, "the warning names what it found")
			}
		})
	}
}
