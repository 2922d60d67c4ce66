package zkrecipes

import (
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
)

// A counter write whose reply was lost is settled as not applied only
// when the node proves it; every other state is unknown.
func TestAtomicCounterLostWriteIsNotAppliedOnlyWhenTheNodeProvesIt(t *testing.T) {
	read := &zk.Stat{Czxid: 10, Mzxid: 20, Version: 3}
	ours, theirs := []byte("ours"), []byte("theirs")
	for _, c := range []struct {
		name string
		now  *zk.Stat
		got  []byte
		want bool
	}{
		{"unchanged since the read", &zk.Stat{Czxid: 10, Mzxid: 20, Version: 3}, theirs, true},
		{"another client's data at the next version", &zk.Stat{Czxid: 10, Mzxid: 25, Version: 4}, theirs, true},
		{"our data at the next version (another client may have written it too)", &zk.Stat{Czxid: 10, Mzxid: 25, Version: 4}, ours, false},
		{"changed further since", &zk.Stat{Czxid: 10, Mzxid: 30, Version: 5}, theirs, false},
		{"deleted and created again", &zk.Stat{Czxid: 40, Mzxid: 40, Version: 0}, theirs, false},
		{"created again and written to the same version", &zk.Stat{Czxid: 40, Mzxid: 45, Version: 4}, theirs, false},
	} {
		assert.Equal(t, c.want, notApplied(read, c.now, c.got, ours), c.name)
	}
}
