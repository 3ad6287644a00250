package lb

import (
	"fmt"
	"testing"
)

// BenchmarkRotationPick is the hot path's target selection alone: one pick of a fresh request
// (nothing tried yet) over a rotation of three healthy backends at equal weights (plain
// rotation), and at weights 10, 90 and 333 (the weighted order), serially and from every core;
// retry is a second pick with the weighted order's candidate tried.
func BenchmarkRotationPick(b *testing.B) {
	for _, c := range []struct {
		name    string
		weights []int
	}{{"equal", []int{100, 100, 100}}, {"weighted", []int{10, 90, 333}}} {
		bs := benchBackends(len(c.weights))
		for i, w := range c.weights {
			bs[i].weight.Store(int32(w))
		}
		r := newRotation(bs)
		b.Run(c.name+"/serial", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if r.pick(&tried{}) == nil {
					b.Fatal("no backend picked")
				}
			}
		})
		b.Run(c.name+"/parallel", func(b *testing.B) {
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
		b.Run(c.name+"/retry", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var t tried
				t.add(r.pick(&t))
				if r.pick(&t) == nil {
					b.Fatal("no backend picked on retry")
				}
			}
		})
	}
}

// benchBackends are n backends in rotation, addressed "0", "1", …
func benchBackends(n int) []*Backend {
	bs := make([]*Backend, n)
	for i := range bs {
		bs[i] = newBackend(fmt.Sprint(i), i, zeroTime)
	}
	return bs
}
