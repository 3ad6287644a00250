package lb

import (
	"fmt"
	"testing"
)

// BenchmarkRotationPick is the hot path's target selection alone: one pick of a fresh request
// (nothing tried yet) over a rotation of three healthy backends, serially and from every core.
func BenchmarkRotationPick(b *testing.B) {
	r := newRotation(benchBackends(3))
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if r.pick(&tried{}) == nil {
				b.Fatal("no backend picked")
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if r.pick(&tried{}) == nil {
					b.Error("no backend picked")
					return
				}
			}
		})
	})
}

// benchBackends are n backends in rotation, addressed "0", "1", …
func benchBackends(n int) []*Backend {
	bs := make([]*Backend, n)
	for i := range bs {
		bs[i] = newBackend(fmt.Sprint(i), i, zeroTime)
	}
	return bs
}
