package zkrecipes

import (
	"fmt"
	"strings"
	"testing"
)

// FuzzNodeNameParsing feeds arbitrary child names to the parsing the queue
// relies on: the sort key is a suffix of the name, a sequence number is
// read only from exactly ten digits and prints back to the same key, and
// recognising the recipe kind never fails.
func FuzzNodeNameParsing(f *testing.F) {
	for _, s := range []string{
		"_c_0f1e2d3c-aaaa-4bbb-8ccc-123456789abc-lock-0000000007",
		"0123456789abcdef0123456789abcdef__lock__0000000005",
		"_c_x-__READ__0000000002", "_c_x-__WRIT__0000000004",
		"_c_b-lock--000000001", "lock-", "leases", "_c_a-latch-0000000001", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		for _, markers := range [][]string{mutexMarkers, rwMarkers} {
			key := sortKey(name, markers)
			if !strings.HasSuffix(name, key) {
				t.Fatalf("sortKey(%q) = %q is not a suffix", name, key)
			}
			seq := parseSeq(key)
			if seq < -1 || seq > 9999999999 {
				t.Fatalf("parseSeq(%q) = %d", key, seq)
			}
			if seq >= 0 && fmt.Sprintf("%010d", seq) != key {
				t.Fatalf("parseSeq(%q) = %d does not print back", key, seq)
			}
		}
		_ = nodeKind(name)
	})
}
