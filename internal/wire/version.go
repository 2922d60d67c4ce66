package wire

import (
	"runtime/debug"
	"slices"
)

// zkModule is the module path of go-zookeeper, whose framing the layer
// relies on.
const zkModule = "github.com/go-zookeeper/zk"

// testedVersions are the go-zookeeper versions the layer was tested with.
var testedVersions = []string{"v1.0.4"}

// TestedVersions returns the go-zookeeper versions the layer was tested
// with (a copy).
func TestedVersions() []string { return slices.Clone(testedVersions) }

// Fits reports whether the layer may run in a binary built as bi says:
// true when the binary's go-zookeeper (after any replace) is one of
// TestedVersions(), and when the binary cannot tell (bi nil, as in a binary
// built without module support, or no go-zookeeper listed in it). A
// replace by another module path (a fork) or a local directory never
// fits. found names what the binary was built with, for the warning.
func Fits(bi *debug.BuildInfo) (fits bool, found string) {
	if bi == nil {
		return true, ""
	}
	for _, m := range bi.Deps {
		if m == nil || m.Path != zkModule {
			continue
		}
		if r := m.Replace; r != nil {
			found = r.Path + " " + r.Version
			if r.Path != zkModule {
				return false, found
			}
			return tested(r.Version), found
		}
		return tested(m.Version), m.Path + " " + m.Version
	}
	return true, ""
}

func tested(v string) bool { return slices.Contains(testedVersions, v) }
