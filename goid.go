package zkrecipes

import (
	"bytes"
	"runtime"
	"strconv"
)

// goid returns the id of the calling goroutine, the identity reentrancy is
// keyed on (as Curator keys it on the thread). Go never reuses a goroutine
// id within a process.
func goid() int64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		panic("zkrecipes: cannot read goroutine id: " + err.Error())
	}
	return id
}
