package discovery

import (
	"fmt"
	"testing"
)

// BenchmarkProviderInstance is the cached lookup: one Provider.Instance
// call over a cache of 10 instances, round robin.
func BenchmarkProviderInstance(b *testing.B) {
	var ins []Instance
	for i := 0; i < 10; i++ {
		ins = append(ins, Instance{Name: "svc", ID: fmt.Sprintf("id-%02d", i), Address: "10.0.0.1", Port: 8000 + i})
	}
	p := providerOf(ins)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := p.Instance(); err != nil {
			b.Fatal(err)
		}
	}
}
