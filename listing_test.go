package zkrecipes

import (
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
)

// A listing's Stat counts creates and deletes in Cversion (2×creates −
// NumChildren), and a sequential node is numbered by the creates before
// it: the counts below are those a server showed (ZooKeeper 3.8: create
// A, create B, delete A, create C).
func TestNoneCreatedSinceReadsTheCreatesOffTheParentsStat(t *testing.T) {
	stat := func(cversion, children int32) *zk.Stat {
		return &zk.Stat{Cversion: cversion, NumChildren: children}
	}
	for _, tc := range []struct {
		name   string
		parent *zk.Stat
		own    string
		want   bool
	}{
		{"first child, alone", stat(1, 1), "_c_u-lock-0000000000", true},
		{"second child, right behind", stat(2, 2), "_c_u-lock-0000000001", true},
		{"a child deleted since: still none created", stat(3, 1), "_c_u-lock-0000000001", true},
		{"a child created since", stat(3, 3), "_c_u-lock-0000000001", false},
		{"created and deleted since", stat(4, 2), "_c_u-lock-0000000001", false},
		{"third create after a delete", stat(4, 2), "_c_u-lock-0000000002", true},
		{"counters past 2^30: Cversion wrapped", stat(-2147483648+2*5-3, 3), "_c_u-lock-1073741828", true},
		{"foreign suffix", stat(1, 1), "_c_u-lock-00000000x0", false},
		{"wrapped sequence", stat(1, 1), "_c_u-lock--000000001", false},
		{"short name", stat(1, 1), "lock-1", false},
		{"no stat", nil, "_c_u-lock-0000000000", false},
	} {
		assert.Equal(t, tc.want, noneCreatedSince(tc.parent, tc.own), tc.name)
	}
}
